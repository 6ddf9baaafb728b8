//! The overloads every CEL expression of the server can call, with their types: cel-go's
//! standard library (with Kubernetes' cross-type numeric comparisons), the string extension
//! (version 2), the lists extension (version 3), the optional library, two-variable
//! comprehensions, `cel.bind`, and the Kubernetes libraries (quantity, semver, IP, CIDR, URL,
//! regex, lists, sets, format, authorizer). This is the one table of signatures: the checker resolves
//! calls against it.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::types::Ty;
use crate::validation::cel::library::comprehensions::{KEYS, MERGE_MAPS, PAIRS_TO_MAP};

/// One overload: receiver style or global, parameter types (receiver first), result type.
#[derive(Debug, Clone)]
pub struct Signature {
    /// Called as `target.name(args)`.
    pub member: bool,
    /// Parameter types, the receiver first.
    pub params: Vec<Ty>,
    /// Result type.
    pub result: Ty,
}

/// `(name, member, "param, param", "result")`: parameters separated by `;`.
type Row = (&'static str, bool, &'static str, &'static str);

const G: bool = false;
const M: bool = true;

/// The overloads, as text.
const ROWS: &[Row] = &[
    // Logic.
    ("!_", G, "bool", "bool"),
    ("_&&_", G, "bool; bool", "bool"),
    ("_||_", G, "bool; bool", "bool"),
    ("@not_strictly_false", G, "bool", "bool"),
    ("_?_:_", G, "bool; A; A", "A"),
    // Equality and membership.
    ("_==_", G, "A; A", "bool"),
    ("_!=_", G, "A; A", "bool"),
    ("@in", G, "A; list(A)", "bool"),
    ("@in", G, "A; map(A, B)", "bool"),
    // Arithmetic.
    ("-_", G, "int", "int"),
    ("-_", G, "double", "double"),
    ("_+_", G, "int; int", "int"),
    ("_+_", G, "uint; uint", "uint"),
    ("_+_", G, "double; double", "double"),
    ("_+_", G, "string; string", "string"),
    ("_+_", G, "bytes; bytes", "bytes"),
    ("_+_", G, "list(A); list(A)", "list(A)"),
    ("_+_", G, "timestamp; duration", "timestamp"),
    ("_+_", G, "duration; timestamp", "timestamp"),
    ("_+_", G, "duration; duration", "duration"),
    ("_-_", G, "int; int", "int"),
    ("_-_", G, "uint; uint", "uint"),
    ("_-_", G, "double; double", "double"),
    ("_-_", G, "timestamp; timestamp", "duration"),
    ("_-_", G, "timestamp; duration", "timestamp"),
    ("_-_", G, "duration; duration", "duration"),
    ("_*_", G, "int; int", "int"),
    ("_*_", G, "uint; uint", "uint"),
    ("_*_", G, "double; double", "double"),
    ("_/_", G, "int; int", "int"),
    ("_/_", G, "uint; uint", "uint"),
    ("_/_", G, "double; double", "double"),
    ("_%_", G, "int; int", "int"),
    ("_%_", G, "uint; uint", "uint"),
    // Indexing.
    ("_[_]", G, "list(A); int", "A"),
    ("_[_]", G, "map(K, V); K", "V"),
    ("_[_]", G, "optional(list(A)); int", "optional(A)"),
    ("_[_]", G, "optional(map(K, V)); K", "optional(V)"),
    ("_[?_]", G, "list(A); int", "optional(A)"),
    ("_[?_]", G, "map(K, V); K", "optional(V)"),
    ("_[?_]", G, "optional(list(A)); int", "optional(A)"),
    ("_[?_]", G, "optional(map(K, V)); K", "optional(V)"),
    // Sizes.
    ("size", G, "string", "int"),
    ("size", G, "bytes", "int"),
    ("size", G, "list(A)", "int"),
    ("size", G, "map(K, V)", "int"),
    ("size", M, "string", "int"),
    ("size", M, "bytes", "int"),
    ("size", M, "list(A)", "int"),
    ("size", M, "map(K, V)", "int"),
    // Conversions.
    ("int", G, "int", "int"),
    ("int", G, "uint", "int"),
    ("int", G, "double", "int"),
    ("int", G, "string", "int"),
    ("int", G, "timestamp", "int"),
    ("int", G, "duration", "int"),
    ("uint", G, "int", "uint"),
    ("uint", G, "uint", "uint"),
    ("uint", G, "double", "uint"),
    ("uint", G, "string", "uint"),
    ("double", G, "int", "double"),
    ("double", G, "uint", "double"),
    ("double", G, "double", "double"),
    ("double", G, "string", "double"),
    ("string", G, "int", "string"),
    ("string", G, "uint", "string"),
    ("string", G, "double", "string"),
    ("string", G, "bool", "string"),
    ("string", G, "bytes", "string"),
    ("string", G, "string", "string"),
    ("string", G, "timestamp", "string"),
    ("string", G, "duration", "string"),
    ("string", G, "net.IP", "string"),
    ("string", G, "net.CIDR", "string"),
    ("bytes", G, "bytes", "bytes"),
    ("bytes", G, "string", "bytes"),
    ("bool", G, "bool", "bool"),
    ("bool", G, "string", "bool"),
    ("timestamp", G, "string", "timestamp"),
    ("timestamp", G, "int", "timestamp"),
    ("timestamp", G, "timestamp", "timestamp"),
    ("duration", G, "string", "duration"),
    ("duration", G, "duration", "duration"),
    ("dyn", G, "A", "dyn"),
    ("type", G, "A", "type"),
    // Strings.
    ("contains", M, "string; string", "bool"),
    ("startsWith", M, "string; string", "bool"),
    ("endsWith", M, "string; string", "bool"),
    ("matches", M, "string; string", "bool"),
    ("matches", G, "string; string", "bool"),
    // Timestamps and durations.
    ("getFullYear", M, "timestamp", "int"),
    ("getFullYear", M, "timestamp; string", "int"),
    ("getMonth", M, "timestamp", "int"),
    ("getMonth", M, "timestamp; string", "int"),
    ("getDayOfYear", M, "timestamp", "int"),
    ("getDayOfYear", M, "timestamp; string", "int"),
    ("getDayOfMonth", M, "timestamp", "int"),
    ("getDayOfMonth", M, "timestamp; string", "int"),
    ("getDate", M, "timestamp", "int"),
    ("getDate", M, "timestamp; string", "int"),
    ("getDayOfWeek", M, "timestamp", "int"),
    ("getDayOfWeek", M, "timestamp; string", "int"),
    ("getHours", M, "timestamp", "int"),
    ("getHours", M, "timestamp; string", "int"),
    ("getHours", M, "duration", "int"),
    ("getMinutes", M, "timestamp", "int"),
    ("getMinutes", M, "timestamp; string", "int"),
    ("getMinutes", M, "duration", "int"),
    ("getSeconds", M, "timestamp", "int"),
    ("getSeconds", M, "timestamp; string", "int"),
    ("getSeconds", M, "duration", "int"),
    ("getMilliseconds", M, "timestamp", "int"),
    ("getMilliseconds", M, "timestamp; string", "int"),
    ("getMilliseconds", M, "duration", "int"),
    // The string extension (version 2).
    ("charAt", M, "string; int", "string"),
    ("indexOf", M, "string; string", "int"),
    ("indexOf", M, "string; string; int", "int"),
    ("lastIndexOf", M, "string; string", "int"),
    ("lastIndexOf", M, "string; string; int", "int"),
    ("lowerAscii", M, "string", "string"),
    ("upperAscii", M, "string", "string"),
    ("trim", M, "string", "string"),
    ("replace", M, "string; string; string", "string"),
    ("replace", M, "string; string; string; int", "string"),
    ("split", M, "string; string", "list(string)"),
    ("split", M, "string; string; int", "list(string)"),
    ("substring", M, "string; int", "string"),
    ("substring", M, "string; int; int", "string"),
    ("join", M, "list(string)", "string"),
    ("join", M, "list(string); string", "string"),
    ("format", M, "string; list(dyn)", "string"),
    ("strings.quote", G, "string", "string"),
    // The lists extension (version 3).
    ("slice", M, "list(A); int; int", "list(A)"),
    ("flatten", M, "list(A)", "list(dyn)"),
    ("flatten", M, "list(A); int", "list(dyn)"),
    ("distinct", M, "list(A)", "list(A)"),
    ("reverse", M, "list(A)", "list(A)"),
    ("sort", M, "list(A)", "list(A)"),
    ("@sortByAssociatedKeys", M, "list(A); list(B)", "list(A)"),
    ("lists.range", G, "int", "list(int)"),
    // The optional library.
    ("optional.of", G, "A", "optional(A)"),
    ("optional.ofNonZeroValue", G, "A", "optional(A)"),
    ("optional.none", G, "", "optional(dyn)"),
    ("hasValue", M, "optional(A)", "bool"),
    ("value", M, "optional(A)", "A"),
    ("orValue", M, "optional(A); A", "A"),
    ("or", M, "optional(A); optional(A)", "optional(A)"),
    ("first", M, "list(A)", "optional(A)"),
    ("last", M, "list(A)", "optional(A)"),
    ("optional.unwrap", G, "list(optional(A))", "list(A)"),
    ("unwrapOpt", M, "list(optional(A))", "list(A)"),
    // Two-variable comprehensions' helpers (names source text cannot spell).
    (KEYS, G, "list(A)", "list(int)"),
    (KEYS, G, "map(K, V)", "list(K)"),
    // The checker types each `[key, value]` pair `transformMap` collects as a one-entry map.
    (PAIRS_TO_MAP, G, "list(map(K, V))", "map(K, V)"),
    (MERGE_MAPS, G, "list(map(K, V))", "map(K, V)"),
    // Kubernetes: quantities.
    ("quantity", G, "string", "kubernetes.Quantity"),
    ("isQuantity", G, "string", "bool"),
    ("sign", M, "kubernetes.Quantity", "int"),
    ("sign", G, "kubernetes.Quantity", "int"),
    (
        "isGreaterThan",
        M,
        "kubernetes.Quantity; kubernetes.Quantity",
        "bool",
    ),
    (
        "isLessThan",
        M,
        "kubernetes.Quantity; kubernetes.Quantity",
        "bool",
    ),
    (
        "compareTo",
        M,
        "kubernetes.Quantity; kubernetes.Quantity",
        "int",
    ),
    ("asApproximateFloat", M, "kubernetes.Quantity", "double"),
    ("asInteger", M, "kubernetes.Quantity", "int"),
    ("isInteger", M, "kubernetes.Quantity", "bool"),
    (
        "add",
        M,
        "kubernetes.Quantity; kubernetes.Quantity",
        "kubernetes.Quantity",
    ),
    ("add", M, "kubernetes.Quantity; int", "kubernetes.Quantity"),
    (
        "sub",
        M,
        "kubernetes.Quantity; kubernetes.Quantity",
        "kubernetes.Quantity",
    ),
    ("sub", M, "kubernetes.Quantity; int", "kubernetes.Quantity"),
    // Kubernetes: semantic versions.
    ("semver", G, "string", "kubernetes.Semver"),
    ("semver", G, "string; bool", "kubernetes.Semver"),
    ("isSemver", G, "string", "bool"),
    ("isSemver", G, "string; bool", "bool"),
    (
        "isGreaterThan",
        M,
        "kubernetes.Semver; kubernetes.Semver",
        "bool",
    ),
    (
        "isLessThan",
        M,
        "kubernetes.Semver; kubernetes.Semver",
        "bool",
    ),
    (
        "compareTo",
        M,
        "kubernetes.Semver; kubernetes.Semver",
        "int",
    ),
    ("major", M, "kubernetes.Semver", "int"),
    ("minor", M, "kubernetes.Semver", "int"),
    ("patch", M, "kubernetes.Semver", "int"),
    // Kubernetes: the authorizer.
    (
        "path",
        M,
        "kubernetes.authorization.Authorizer; string",
        "kubernetes.authorization.PathCheck",
    ),
    (
        "group",
        M,
        "kubernetes.authorization.Authorizer; string",
        "kubernetes.authorization.GroupCheck",
    ),
    (
        "serviceAccount",
        M,
        "kubernetes.authorization.Authorizer; string; string",
        "kubernetes.authorization.Authorizer",
    ),
    (
        "resource",
        M,
        "kubernetes.authorization.GroupCheck; string",
        "kubernetes.authorization.ResourceCheck",
    ),
    (
        "subresource",
        M,
        "kubernetes.authorization.ResourceCheck; string",
        "kubernetes.authorization.ResourceCheck",
    ),
    (
        "namespace",
        M,
        "kubernetes.authorization.ResourceCheck; string",
        "kubernetes.authorization.ResourceCheck",
    ),
    (
        "name",
        M,
        "kubernetes.authorization.ResourceCheck; string",
        "kubernetes.authorization.ResourceCheck",
    ),
    (
        "fieldSelector",
        M,
        "kubernetes.authorization.ResourceCheck; string",
        "kubernetes.authorization.ResourceCheck",
    ),
    (
        "labelSelector",
        M,
        "kubernetes.authorization.ResourceCheck; string",
        "kubernetes.authorization.ResourceCheck",
    ),
    (
        "check",
        M,
        "kubernetes.authorization.PathCheck; string",
        "kubernetes.authorization.Decision",
    ),
    (
        "check",
        M,
        "kubernetes.authorization.ResourceCheck; string",
        "kubernetes.authorization.Decision",
    ),
    ("allowed", M, "kubernetes.authorization.Decision", "bool"),
    ("reason", M, "kubernetes.authorization.Decision", "string"),
    ("errored", M, "kubernetes.authorization.Decision", "bool"),
    ("error", M, "kubernetes.authorization.Decision", "string"),
    // Kubernetes: IP addresses and CIDRs.
    ("ip", G, "string", "net.IP"),
    ("isIP", G, "string", "bool"),
    ("ip.isCanonical", G, "string", "bool"),
    ("family", M, "net.IP", "int"),
    ("isUnspecified", M, "net.IP", "bool"),
    ("isLoopback", M, "net.IP", "bool"),
    ("isLinkLocalMulticast", M, "net.IP", "bool"),
    ("isLinkLocalUnicast", M, "net.IP", "bool"),
    ("isGlobalUnicast", M, "net.IP", "bool"),
    ("cidr", G, "string", "net.CIDR"),
    ("isCIDR", G, "string", "bool"),
    ("containsIP", M, "net.CIDR; string", "bool"),
    ("containsIP", M, "net.CIDR; net.IP", "bool"),
    ("containsCIDR", M, "net.CIDR; string", "bool"),
    ("containsCIDR", M, "net.CIDR; net.CIDR", "bool"),
    ("ip", M, "net.CIDR", "net.IP"),
    ("prefixLength", M, "net.CIDR", "int"),
    ("masked", M, "net.CIDR", "net.CIDR"),
    // Kubernetes: URLs.
    ("url", G, "string", "kubernetes.URL"),
    ("isURL", G, "string", "bool"),
    ("getScheme", M, "kubernetes.URL", "string"),
    ("getHost", M, "kubernetes.URL", "string"),
    ("getHostname", M, "kubernetes.URL", "string"),
    ("getPort", M, "kubernetes.URL", "string"),
    ("getEscapedPath", M, "kubernetes.URL", "string"),
    ("getQuery", M, "kubernetes.URL", "map(string, list(string))"),
    // Kubernetes: regular expressions.
    ("find", M, "string; string", "string"),
    ("findAll", M, "string; string", "list(string)"),
    ("findAll", M, "string; string; int", "list(string)"),
    // Kubernetes: lists.
    ("isSorted", M, "list(A)", "bool"),
    ("sum", M, "list(A)", "A"),
    ("min", M, "list(A)", "A"),
    ("max", M, "list(A)", "A"),
    ("indexOf", M, "list(A); A", "int"),
    ("lastIndexOf", M, "list(A); A", "int"),
    // cel-go's sets extension.
    ("sets.contains", G, "list(A); list(A)", "bool"),
    ("sets.equivalent", G, "list(A); list(A)", "bool"),
    ("sets.intersects", G, "list(A); list(A)", "bool"),
    // Kubernetes: named formats (`format.<name>()` are added from the library's list).
    (
        "format.named",
        G,
        "string",
        "optional(kubernetes.NamedFormat)",
    ),
    (
        "validate",
        M,
        "kubernetes.NamedFormat; string",
        "optional(list(string))",
    ),
];

/// The comparison operators, defined for each ordered type and across numeric types.
const COMPARISONS: [&str; 4] = ["_<_", "_<=_", "_>_", "_>=_"];
const ORDERED: [&str; 8] = [
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "timestamp",
    "duration",
];
const NUMERIC: [&str; 3] = ["int", "uint", "double"];

/// The overloads by function name (qualified functions with their namespace).
pub fn table() -> &'static HashMap<String, Vec<Signature>> {
    static TABLE: LazyLock<HashMap<String, Vec<Signature>>> = LazyLock::new(|| {
        let mut t: HashMap<String, Vec<Signature>> = HashMap::new();
        let mut add = |name: &str, member: bool, params: Vec<Ty>, result: Ty| {
            t.entry(name.to_string()).or_default().push(Signature {
                member,
                params,
                result,
            });
        };
        for (name, member, params, result) in ROWS {
            let params = params
                .split(';')
                .filter(|p| !p.trim().is_empty())
                .map(Ty::parse)
                .collect();
            add(name, *member, params, Ty::parse(result));
        }
        for op in COMPARISONS {
            for t in ORDERED {
                add(op, false, vec![Ty::parse(t), Ty::parse(t)], Ty::Bool);
            }
            // Kubernetes enables cel-go's cross-type numeric comparisons.
            for a in NUMERIC {
                for b in NUMERIC.iter().filter(|b| **b != a) {
                    add(op, false, vec![Ty::parse(a), Ty::parse(b)], Ty::Bool);
                }
            }
        }
        for name in crate::validation::cel::library::format::constant_names() {
            add(
                &format!("format.{name}"),
                false,
                Vec::new(),
                Ty::Opaque("kubernetes.NamedFormat"),
            );
        }
        t
    });
    &TABLE
}

/// Whether `namespace.name` is a qualified function of the table.
pub fn is_qualified_function(namespace: &str, name: &str) -> bool {
    table().contains_key(&format!("{namespace}.{name}"))
}
