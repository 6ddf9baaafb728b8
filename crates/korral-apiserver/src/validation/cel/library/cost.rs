//! The cost of the libraries' calls for [`crate::validation::cel::cost`]: the work of a call
//! given its arguments' shapes, and its result's shape. As upstream's `CostEstimator`, parsing
//! and regex functions are linear in their text (the regex ones in text × pattern), list
//! functions walk their list once, and the rest are constant.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::validation::cel::cost::{LIST_CREATE, Shape};

/// Every function the libraries declare (qualified ones with their namespace).
pub const FUNCTIONS: &[&str] = &[
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "quantity",
    "isQuantity",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "add",
    "sub",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "isSorted",
    "sum",
    "min",
    "max",
    "find",
    "findAll",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    "format.named",
    "validate",
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    "hasValue",
    "value",
    "orValue",
    "or",
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "fieldSelector",
    "labelSelector",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
];

/// The functions of cel-go's extensions Kubernetes enables (lists at version 3, the optional
/// library's list functions, two-variable comprehensions' helper) whose evaluation errors are
/// reported with their message alone, as cel-go does.
pub const EXT_FUNCTIONS: &[&str] = &[
    "slice",
    "flatten",
    "sort",
    "sortBy",
    "lists.range",
    "optional.unwrap",
    "cel.@mapInsert",
];

/// Whether `namespace.name` is a library function.
pub fn is_qualified(namespace: &str, name: &str) -> bool {
    let full = format!("{namespace}.{name}");
    FUNCTIONS.contains(&full.as_str())
        || EXT_FUNCTIONS.contains(&full.as_str())
        || full == "strings.quote"
        || (namespace == "format" && super::format::constant_names().any(|n| n == name))
}

/// The largest value a library function makes from small arguments (a parsed IP, CIDR,
/// quantity, version or format).
const SMALL: u64 = 64;

/// Upstream's `StringTraversalCostFactor`: scanning a string costs a tenth per byte.
const TRAVERSAL: f64 = 0.1;
/// Upstream's `RegexStringLengthCostFactor`: a pattern costs a quarter per byte.
const REGEX: f64 = 0.25;

/// The fixed cost of an authorization check (upstream's: two fit one call's limit).
pub const AUTHORIZATION_CHECK: u64 = 350_000;
/// Upstream's `StructCreateBaseCost`.
const STRUCT_CREATE: u64 = 40;
/// Requirements per selector byte (the shortest requirement is two bytes: `k,`).
const SELECTOR_REQUIREMENTS: f64 = 0.5;

/// `bytes × factor`, rounded up as upstream's `math.Ceil`.
fn scaled(bytes: u64, factor: f64) -> u64 {
    ((bytes as f64) * factor).ceil() as u64
}

/// Upstream's `MaxFormatSize`: the largest named format, for comparing two.
const MAX_FORMAT_SIZE: u64 = 64;

/// The work of `a == b` where both are of library type `type_name` (`rhs` the right
/// operand's shape), as Kubernetes' estimator charges it: parsed addresses, quantities,
/// versions and the authorizer's values 1, formats a scan of the largest, URLs a scan of the
/// right operand's text; `None` for another type (cel-go's equality cost then).
pub fn equality_cost(type_name: &str, rhs: &Shape) -> Option<u64> {
    match type_name {
        super::ip::TYPE_NAME
        | super::cidr::TYPE_NAME
        | super::quantity::TYPE_NAME
        | super::semver::TYPE_NAME => Some(1),
        n if super::authz::TYPE_NAMES.contains(&n) => Some(1),
        super::format::TYPE_NAME => Some(scaled(MAX_FORMAT_SIZE, TRAVERSAL)),
        super::urls::TYPE_NAME => Some(scaled(rhs.len, TRAVERSAL)),
        _ => None,
    }
}

/// The work of library call `name` and its result's shape, or `None` if no library declares
/// `name`. The costs are upstream's (`pkg/cel/library/cost.go`): parsing and scanning a
/// string costs [`TRAVERSAL`] per byte, regular expressions text × pattern, list functions
/// a walk of the list, accessors and comparisons of parsed values 1.
pub fn call_cost(name: &str, args: &[Shape]) -> Option<(u64, Shape)> {
    let w = |i: usize| args.get(i).map_or(1, |s| s.len);
    let scalar = Shape::scalar;
    let traverse = |i: usize| scaled(w(i), TRAVERSAL).max(1);
    Some(match name {
        // Parsing: a scan of the text; the value is small (a URL keeps its text).
        "ip" | "cidr" | "quantity" | "semver" => (traverse(0), Shape::opaque(SMALL)),
        "url" => (traverse(0), Shape::opaque(w(0).max(SMALL))),
        "isIP" | "isCIDR" | "isURL" | "isQuantity" | "isSemver" => (traverse(0), scalar()),
        "ip.isCanonical" => (scaled(w(0), 2.0 * TRAVERSAL).max(1), scalar()),
        // Both addresses compared, the argument parsed when it is a string.
        "containsIP" | "containsCIDR" => (
            scaled(w(0).saturating_mul(2), TRAVERSAL)
                .saturating_add(traverse(1))
                .saturating_add(1),
            scalar(),
        ),
        "family"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "prefixLength"
        | "sign"
        | "isInteger"
        | "asInteger"
        | "asApproximateFloat"
        | "isGreaterThan"
        | "isLessThan"
        | "compareTo"
        | "major"
        | "minor"
        | "patch"
        | "format.named" => (1, scalar()),
        "masked" | "add" | "sub" => (1, Shape::opaque(SMALL)),
        "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => {
            (1, Shape::opaque(w(0)))
        }
        "getQuery" => {
            let n = w(0);
            let shape = Shape {
                len: n,
                weight: n.saturating_mul(4),
                fields: BTreeMap::new(),
                items: Some(Arc::new(Shape {
                    len: n,
                    weight: n.saturating_mul(2),
                    fields: BTreeMap::new(),
                    items: Some(Arc::new(Shape::opaque(n))),
                    keys: None,
                })),
                keys: None,
            };
            (1, shape)
        }
        // The lists library walks its list once, comparing or adding elements (strings
        // scanned at the traversal factor), as Kubernetes' estimator.
        "isSorted" | "sum" | "min" | "max" => {
            let list = args.first().cloned().unwrap_or_default();
            let item = list
                .items
                .as_deref()
                .cloned()
                .unwrap_or_else(|| Shape::opaque(list.weight));
            // Upstream charges 1 an element, plus the traversal of strings and bytes.
            let text = item.items.is_none() && item.fields.is_empty() && item.weight > 1;
            let per_item = if text {
                scaled(item.weight, TRAVERSAL).saturating_add(1)
            } else {
                1
            };
            (list.len.max(1).saturating_mul(per_item), item)
        }
        // Text scan × pattern length, as upstream.
        "find" | "findAll" => {
            let text = w(0);
            let cost = scaled(text.saturating_add(1), TRAVERSAL)
                .saturating_mul(scaled(w(1), REGEX).max(1));
            let shape = if name == "find" {
                Shape::opaque(text)
            } else {
                Shape {
                    len: text.saturating_add(1),
                    weight: text.saturating_mul(2).saturating_add(2),
                    fields: BTreeMap::new(),
                    items: Some(Arc::new(Shape::opaque(text))),
                    keys: None,
                }
            };
            (cost.max(1), shape)
        }
        // Every element of one list against every element of the other.
        "sets.contains" | "sets.equivalent" | "sets.intersects" => {
            let (a, b) = (
                args.first().cloned().unwrap_or_default(),
                args.get(1).cloned().unwrap_or_default(),
            );
            let pairs = a.len.max(1).saturating_mul(b.len.max(1));
            let elem = scaled(a.any_entry_weight().max(b.any_entry_weight()), TRAVERSAL).max(1);
            (pairs.saturating_mul(elem), scalar())
        }
        // Name validation runs its (at most 128-byte, `MaxNameFormatRegexSize`) regular
        // expressions over the text.
        "validate" => {
            let text = w(1);
            let shape = Shape {
                len: 4,
                weight: text.saturating_add(512).saturating_mul(4),
                fields: BTreeMap::new(),
                items: Some(Arc::new(Shape::opaque(text.saturating_add(512)))),
                keys: None,
            };
            (
                scaled(text, TRAVERSAL)
                    .max(1)
                    .saturating_mul(scaled(128, REGEX)),
                shape,
            )
        }
        // Optional values: no larger than what they wrap.
        "hasValue" | "optional.none" => (1, scalar()),
        "value" | "orValue" | "or" | "optional.of" | "optional.ofNonZeroValue" => {
            let largest = args.iter().map(|a| a.weight).max().unwrap_or(1);
            (1, Shape::opaque(largest))
        }
        // The authorizer: a check is priced so that two fit one expression's budget, as
        // upstream's; building checks and reading decisions costs 1; a selector is parsed
        // into requirements (one per two bytes, each a list and a struct).
        "check" => (AUTHORIZATION_CHECK, Shape::opaque(SMALL)),
        "path" | "group" | "serviceAccount" | "resource" | "subresource" | "namespace" | "name" => {
            (1, Shape::opaque(SMALL))
        }
        "allowed" | "errored" => (1, scalar()),
        "reason" | "error" => (1, Shape::opaque(SMALL)),
        "fieldSelector" | "labelSelector" => {
            let text = w(1);
            let requirements = scaled(text, SELECTOR_REQUIREMENTS);
            let cost = LIST_CREATE
                .saturating_add(scaled(text, TRAVERSAL))
                .saturating_add(requirements.saturating_mul(LIST_CREATE + STRUCT_CREATE));
            (cost, Shape::opaque(SMALL))
        }
        other if other.starts_with("format.") => (1, Shape::opaque(SMALL)),
        _ => return None,
    })
}

impl Shape {
    /// The weight of the largest entry.
    fn any_entry_weight(&self) -> u64 {
        self.items.as_ref().map_or(self.weight, |i| i.weight)
    }
}
