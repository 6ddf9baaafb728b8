//! Cost bounds for CEL programs, computed before anything is evaluated.
//!
//! The interpreter has no way to stop a running program, so a program is only evaluated once an
//! upper bound on its work is known and within the limit. The bound comes from an abstract
//! evaluation of the expression over [`Shape`]s: for every sub-expression, an upper bound on the
//! size of its value and on the work of computing it. The same analysis serves both ends:
//!
//! * at CRD creation, `self` is shaped by the schema (`maxItems`, `maxLength`,
//!   `maxProperties`, or what fits in the largest request when they are absent) — upstream's
//!   static estimate;
//! * before evaluating against a request, `self` and `oldSelf` are shaped by the actual values
//!   (lengths of the lists, sizes of the strings), so the bound holds for this very evaluation.
//!
//! Costs follow cel-go's estimator (`checker/cost.go`) with Kubernetes' options: identifiers
//! and field selections cost 1, constants and `has()` nothing, list and map constructions 10
//! and 30 beside their elements, calls their arguments plus their own work (1 by default;
//! strings compared, concatenated, converted or scanned at 0.1 a byte, regular expressions
//! at text × pattern, cel-go's list extension and Kubernetes' string estimates as upstream
//! charges them). Comprehensions (`all`, `exists`, `exists_one`, `map`, `filter`, the
//! two-variable ones) multiply the cost of their condition and step by the number of
//! iterations, and the accumulator of `map`/`filter` grows by the size of one step per
//! iteration. Sizes are cel-go's (a shape's `len`: characters of a string, items of a list,
//! entries of a map), over a schema the `MaxElements` Kubernetes gives each node (strings
//! 4 × `maxLength`, numbers, objects and map keys 0); list concatenation costs cel-go's 1
//! although the engine copies. Functions outside the table below and the
//! Kubernetes libraries' ([`library::cost`]) are refused when the rule is compiled, so no
//! call escapes the bound.

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use super::check::{Ty, Types};
use super::library;

/// The largest request body; unbounded strings and lists are assumed to fill it (as upstream).
pub const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// An upper bound on a value: how many entries it has (list items, map entries, string bytes),
/// how large it is in total, and, where known, the shapes of its fields and items.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// Entries: list items, map entries, string bytes (1 for scalars).
    pub len: u64,
    /// Total size: bytes of strings plus one per node, summed over the whole value.
    pub weight: u64,
    /// Known fields of an object (a property of the schema or a key present in the data).
    pub fields: BTreeMap<String, Arc<Shape>>,
    /// Items of a list, or values of a map whose keys are not known.
    pub items: Option<Arc<Shape>>,
    /// Keys of a map whose schema declares its values only (`additionalProperties`): cel-go
    /// sizes them by the key type, a string of no declared size.
    pub keys: Option<Arc<Shape>>,
}

impl Shape {
    /// A scalar (number, bool, null).
    pub fn scalar() -> Self {
        Self {
            len: 1,
            weight: 1,
            ..Self::default()
        }
    }

    /// A string or bytes of exactly `len` bytes (a literal: possibly empty).
    pub fn text(len: u64) -> Self {
        Self {
            len,
            weight: len,
            ..Self::default()
        }
    }

    /// A value about which only its total size is known: any part of it is at most as large.
    pub fn opaque(weight: u64) -> Self {
        Self {
            len: weight.max(1),
            weight: weight.max(1),
            ..Self::default()
        }
    }

    /// The shape of a field or map entry `name`.
    fn field(&self, name: &str) -> Shape {
        if let Some(f) = self.fields.get(name) {
            return (**f).clone();
        }
        if let Some(items) = &self.items {
            return (**items).clone();
        }
        if !self.fields.is_empty() {
            // A field the shape does not know is absent (evaluation fails with no such key).
            return Shape::scalar();
        }
        Shape::opaque(self.weight)
    }

    /// The shape of any entry: a list item, a map value, or a map key.
    fn any_entry(&self) -> Shape {
        let mut out = self.entry_value();
        for name in self.fields.keys() {
            out = join(&out, &Shape::opaque(name.len() as u64));
        }
        if let Some(keys) = self.map_keys() {
            out = join(&out, keys);
        }
        out
    }

    /// The shape of a list item or a map value (what indexing yields).
    fn entry_value(&self) -> Shape {
        let mut out = match &self.items {
            Some(items) => (**items).clone(),
            None if self.fields.is_empty() => Shape::opaque(self.weight),
            None => Shape::default(),
        };
        for f in self.fields.values() {
            out = join(&out, f);
        }
        out
    }

    /// The keys of a map whose schema declares its values only (`additionalProperties`).
    fn map_keys(&self) -> Option<&Shape> {
        self.keys.as_deref()
    }

    /// What a one-variable comprehension binds: a list's items, a map's keys.
    fn iteration_entry(&self) -> Shape {
        if let Some(keys) = self.map_keys() {
            return keys.clone();
        }
        if self.items.is_none() && !self.fields.is_empty() {
            return key_of(self);
        }
        self.any_entry()
    }

    /// The shape of a JSON value, exact up to joining the items of each list.
    pub fn of_json(value: &Value) -> Shape {
        shape_of_json(value, 0)
    }

    /// The shape of any value a structural schema admits (the static estimate).
    pub fn of_schema(schema: &Value) -> Shape {
        shape_of_schema(schema, 0)
    }
}

/// The least shape bounding both.
pub fn join(a: &Shape, b: &Shape) -> Shape {
    let mut fields = a.fields.clone();
    for (k, v) in &b.fields {
        let merged = match fields.get(k) {
            Some(existing) => Arc::new(join(existing, v)),
            None => v.clone(),
        };
        fields.insert(k.clone(), merged);
    }
    let either = |x: &Option<Arc<Shape>>, y: &Option<Arc<Shape>>| match (x, y) {
        (Some(x), Some(y)) => Some(Arc::new(join(x, y))),
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (None, None) => None,
    };
    Shape {
        len: a.len.max(b.len),
        weight: a.weight.max(b.weight),
        fields,
        items: either(&a.items, &b.items),
        keys: either(&a.keys, &b.keys),
    }
}

const MAX_DEPTH: usize = 256;

fn shape_of_json(value: &Value, depth: usize) -> Shape {
    if depth > MAX_DEPTH {
        return Shape::opaque(MAX_REQUEST_BYTES);
    }
    match value {
        Value::String(s) => Shape::opaque(s.len() as u64),
        Value::Array(items) => {
            let mut joined: Option<Shape> = None;
            let mut weight = 1u64;
            for item in items {
                let s = shape_of_json(item, depth + 1);
                weight = weight.saturating_add(s.weight).saturating_add(1);
                joined = Some(match joined {
                    Some(j) => join(&j, &s),
                    None => s,
                });
            }
            Shape {
                len: items.len() as u64,
                weight,
                fields: BTreeMap::new(),
                items: joined.map(Arc::new),
                keys: None,
            }
        }
        Value::Object(map) => {
            let mut weight = 1u64;
            let mut fields = BTreeMap::new();
            for (k, v) in map {
                let s = shape_of_json(v, depth + 1);
                weight = weight
                    .saturating_add(s.weight)
                    .saturating_add(k.len() as u64)
                    .saturating_add(1);
                fields.insert(k.clone(), Arc::new(s));
            }
            Shape {
                len: map.len() as u64,
                weight,
                fields,
                items: None,
                keys: None,
            }
        }
        _ => Shape::scalar(),
    }
}

/// The fewest bytes a value of this schema takes in a request: upstream's
/// `MinSerializedSize` (`apiserver/pkg/cel/types.go`, `common/schemas.go`), which bounds
/// unbounded lists and maps.
fn min_size(schema: &Value, depth: usize) -> u64 {
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return 1;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => match schema.get("format").and_then(Value::as_str) {
            Some("duration") => 3,
            Some("date") => 12,
            Some("date-time") => 21,
            _ => 2,
        },
        Some("boolean") => 4,
        Some("integer") | Some("number") => 1,
        Some("object") if depth < MAX_DEPTH && schema.get("additionalProperties").is_none() => {
            // `{}` plus each required property without a default: `"name":value,`.
            let props = schema.get("properties").and_then(Value::as_object);
            let required = schema.get("required").and_then(Value::as_array);
            let mut size = 2u64;
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                if let Some(prop) = props.and_then(|p| p.get(name))
                    && prop.get("default").is_none()
                {
                    size = size
                        .saturating_add(name.len() as u64)
                        .saturating_add(min_size(prop, depth + 1))
                        .saturating_add(4);
                }
            }
            size
        }
        _ => 2,
    }
}

/// Upstream's `MaxRequestSizeBytes - 2`: the longest unbounded string, and what unbounded
/// lists and maps divide among their entries.
const UNBOUNDED: u64 = MAX_REQUEST_BYTES - 2;

/// The size cel-go's estimator gives a string of this schema (upstream's `MaxElements` of its
/// `DeclType`): 4 × `maxLength` (bytes of as many code points; `maxLength` itself for
/// `format: byte`), the longest enum value, the fixed JSON sizes of dates, times and
/// durations, or the longest string a request holds.
fn string_size(schema: &Value) -> u64 {
    let max_length = schema.get("maxLength").and_then(Value::as_u64);
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    if !int_or_string {
        match schema.get("format").and_then(Value::as_str) {
            Some("byte") => return max_length.unwrap_or(UNBOUNDED),
            // Upstream's `MaxDurationSizeJSON`, `JSONDateSize`, `MaxDatetimeSizeJSON`.
            Some("duration") => return 32,
            Some("date") => return 12,
            Some("date-time") => return 32,
            _ => {}
        }
    }
    if let Some(n) = max_length {
        return n.saturating_mul(4);
    }
    if !int_or_string && let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let longest = values.iter().filter_map(Value::as_str).map(str::len).max();
        return longest.unwrap_or(0) as u64;
    }
    UNBOUNDED
}

/// A scalar of a schema: cel-go finds its size by its path, the `MaxElements` upstream leaves
/// at 0 for numbers and booleans (an equality with it costs nothing beside its operands).
fn schema_scalar() -> Shape {
    Shape {
        len: 0,
        weight: 1,
        ..Shape::default()
    }
}

fn shape_of_schema(schema: &Value, depth: usize) -> Shape {
    if depth > MAX_DEPTH
        || schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true)
            // Upstream ignores the extension on an object whose properties it knows.
            && (schema.get("type").and_then(Value::as_str) != Some("object")
                || schema.get("properties").is_none() && schema.get("additionalProperties").is_none())
    {
        return Shape::opaque(MAX_REQUEST_BYTES);
    }
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        let len = string_size(schema);
        return Shape {
            len,
            weight: len.clamp(1, MAX_REQUEST_BYTES),
            ..Shape::default()
        };
    }
    let max = |k: &str| schema.get(k).and_then(Value::as_u64);
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => {
            let len = string_size(schema);
            Shape {
                len,
                weight: len.min(MAX_REQUEST_BYTES),
                ..Shape::default()
            }
        }
        Some("array") => {
            let items = schema
                .get("items")
                .map(|i| shape_of_schema(i, depth + 1))
                .unwrap_or_else(|| Shape::opaque(MAX_REQUEST_BYTES));
            // Upstream's `estimateMaxArrayItemsFromMinSize`: `[]` and a comma an item.
            let min = schema.get("items").map_or(2, |i| min_size(i, depth + 1));
            let len = max("maxItems").unwrap_or(UNBOUNDED / (min + 1));
            let weight = len
                .saturating_mul(items.weight.saturating_add(1))
                .saturating_add(1)
                .min(MAX_REQUEST_BYTES);
            Shape {
                len,
                weight,
                fields: BTreeMap::new(),
                items: Some(Arc::new(items)),
                keys: None,
            }
        }
        Some("object") | None => {
            let mut fields = BTreeMap::new();
            let mut weight = 1u64;
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    let s = shape_of_schema(v, depth + 1);
                    weight = weight
                        .saturating_add(s.weight)
                        .saturating_add(k.len() as u64 + 1);
                    fields.insert(k.clone(), Arc::new(s));
                }
            }
            // An object's size is the `MaxElements` upstream leaves at 0.
            let mut len = 0;
            let mut items = None;
            let mut keys = None;
            match schema.get("additionalProperties") {
                Some(add @ Value::Object(_)) => {
                    let values = shape_of_schema(add, depth + 1);
                    // Upstream's `estimateMaxAdditionalPropertiesFromMinSize`: `""`, `:`, `,`
                    // and a value an entry.
                    let unbounded = UNBOUNDED / (min_size(add, depth + 1) + 6);
                    len = max("maxProperties").unwrap_or(unbounded);
                    weight = len
                        .saturating_mul(values.weight.saturating_add(MAX_KEY_BYTES))
                        .saturating_add(1);
                    items = Some(Arc::new(values));
                    // cel-go sizes the keys by their type, a string of no declared size (0).
                    keys = Some(Arc::new(Shape::text(0)));
                }
                Some(Value::Bool(true)) => return Shape::opaque(MAX_REQUEST_BYTES),
                _ => {}
            }
            if schema.get("type").is_none() && fields.is_empty() && items.is_none() {
                return Shape::opaque(MAX_REQUEST_BYTES);
            }
            Shape {
                len,
                weight: weight.min(MAX_REQUEST_BYTES),
                fields,
                items,
                keys,
            }
        }
        Some("integer") | Some("number") | Some("boolean") => schema_scalar(),
        _ => Shape::scalar(),
    }
}

/// Map keys are strings without a declared bound; assume a generous one for the weight.
const MAX_KEY_BYTES: u64 = 256;

/// Why a program cannot be bounded (a compile error for the rule).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unbounded {
    /// A function or variable the environment does not declare.
    #[error("undeclared reference to '{0}'")]
    Undeclared(String),
    /// An expression form the server does not evaluate (message literals).
    #[error("unsupported expression: {0}")]
    Unsupported(String),
}

/// The bound of one expression: its work and the shape of its value.
#[derive(Debug, Clone)]
struct Bound {
    cost: u64,
    shape: Shape,
}

/// Costs of functions an environment adds to the standard ones: the work of a call and its
/// result's shape given its arguments' shapes (receiver first), or `None` for a function the
/// environment does not declare either.
pub type Library = dyn Fn(&str, &[Shape]) -> Option<(u64, Shape)> + Sync;

/// Variables in scope and their shapes.
struct Scope<'a> {
    vars: Vec<(&'a str, Shape)>,
    library: Option<&'a Library>,
    /// The checker's types of the expressions, when the program was type-checked.
    types: Option<&'a Types>,
}

impl Scope<'_> {
    /// The checked type of `e`, when known.
    fn ty(&self, e: &IdedExpr) -> Option<&Ty> {
        self.types.and_then(|t| t.get(&e.id))
    }

    fn lookup(&self, name: &str) -> Option<&Shape> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| s)
    }

    /// The variable named `namespace.field` (without building the name: this runs for every
    /// selection of every rule).
    fn lookup_qualified(&self, namespace: &str, field: &str) -> Option<&Shape> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| super::qualified_name_is(n, namespace, field))
            .map(|(_, s)| s)
    }
}

/// An upper bound on the work of evaluating `expr` with the given variables' shapes.
pub fn estimate(expr: &IdedExpr, vars: &[(&str, Shape)]) -> Result<u64, Unbounded> {
    let mut scope = Scope {
        vars: vars.iter().map(|(n, s)| (*n, s.clone())).collect(),
        library: None,
        types: None,
    };
    Ok(bound(expr, &mut scope)?.cost)
}

/// [`estimate`] of a type-checked program, with the checker's `types` of its expressions
/// ([`super::check::check_typed`]): where a cost depends on the operands' types (a conversion
/// of a string to a string, an ordering, an equality of library values, a selection on
/// `dyn`), it is cel-go's for those types instead of the bound for any type.
pub fn estimate_typed(
    expr: &IdedExpr,
    vars: &[(&str, Shape)],
    types: &Types,
) -> Result<u64, Unbounded> {
    let mut scope = Scope {
        vars: vars.iter().map(|(n, s)| (*n, s.clone())).collect(),
        library: None,
        types: Some(types),
    };
    Ok(bound(expr, &mut scope)?.cost)
}

/// [`estimate`] in an environment whose `library` declares functions beyond the standard ones
/// (consulted only for the names the standard table does not know).
pub fn estimate_with<'a>(
    expr: &'a IdedExpr,
    vars: &[(&'a str, Shape)],
    library: &'a Library,
) -> Result<u64, Unbounded> {
    let mut scope = Scope {
        vars: vars.to_vec(),
        library: Some(library),
        types: None,
    };
    Ok(bound(expr, &mut scope)?.cost)
}

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

fn mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

fn bound<'a>(expr: &'a IdedExpr, scope: &mut Scope<'a>) -> Result<Bound, Unbounded> {
    match &expr.expr {
        // Constants cost nothing (cel-go's `ConstCost`).
        Expr::Literal(lit) => Ok(Bound {
            cost: 0,
            shape: match lit {
                LiteralValue::String(s) => Shape::text(s.inner().len() as u64),
                LiteralValue::Bytes(b) => Shape::text(b.inner().len() as u64),
                _ => Shape::scalar(),
            },
        }),
        Expr::Ident(name) => match scope.lookup(name) {
            Some(shape) => Ok(Bound {
                cost: 1,
                shape: shape.clone(),
            }),
            // A type name: cel-go sizes it by its path, the root's (0 for an object).
            None if super::check::TYPE_NAMES.contains(&name.as_str()) => Ok(Bound {
                cost: 1,
                shape: schema_scalar(),
            }),
            None => Err(Unbounded::Undeclared(name.clone())),
        },
        Expr::Select(sel) => {
            // A variable with a qualified name (`authorizer.requestResource`) wins over a
            // field of its prefix, as in cel-go.
            if let Expr::Ident(ns) = &sel.operand.expr
                && !sel.test
                && let Some(shape) = scope.lookup_qualified(ns, &sel.field)
            {
                return Ok(Bound {
                    cost: 1,
                    shape: shape.clone(),
                });
            }
            // A qualified type name (`google.protobuf.Timestamp`, `net.IP`): an identifier
            // once cel-go has checked it.
            if let Some(root) = super::check::types::qualified_type_root(expr)
                && scope.lookup(root).is_none()
            {
                return Ok(Bound {
                    cost: 1,
                    shape: schema_scalar(),
                });
            }
            let operand = bound(&sel.operand, scope)?;
            let shape = if sel.test {
                Shape::scalar()
            } else {
                operand.shape.field(&sel.field)
            };
            // `has()` costs nothing beside its operand (Kubernetes sets cel-go's
            // `PresenceTestHasCost(false)`); a field selection costs 1 on a map or an object,
            // nothing on a value of another type (`dyn`, an optional), as cel-go's
            // `costSelect`; 1 when the type is not known.
            let select = match scope.ty(&sel.operand) {
                Some(Ty::Map(..) | Ty::Object(_)) | None => 1,
                Some(_) => 0,
            };
            Ok(Bound {
                cost: if sel.test {
                    operand.cost
                } else {
                    add(operand.cost, select)
                },
                shape,
            })
        }
        // A list costs its elements and its allocation (cel-go's `ListCreateBaseCost`).
        Expr::List(list) => {
            let mut cost = LIST_CREATE;
            let mut weight = 1u64;
            let mut items: Option<Shape> = None;
            for e in &list.elements {
                let b = bound(e, scope)?;
                cost = add(cost, b.cost);
                weight = add(add(weight, b.shape.weight), 1);
                items = Some(match items {
                    Some(i) => join(&i, &b.shape),
                    None => b.shape,
                });
            }
            Ok(Bound {
                cost,
                shape: Shape {
                    len: list.elements.len() as u64,
                    weight,
                    fields: BTreeMap::new(),
                    items: items.map(Arc::new),
                    keys: None,
                },
            })
        }
        // A map costs its entries and its allocation (cel-go's `MapCreateBaseCost`).
        Expr::Map(map) => {
            let mut cost = MAP_CREATE;
            let mut weight = 1u64;
            let mut fields = BTreeMap::new();
            let mut items: Option<Shape> = None;
            for entry in &map.entries {
                let EntryExpr::MapEntry(e) = &entry.expr else {
                    return Err(Unbounded::Unsupported("message construction".into()));
                };
                let k = bound(&e.key, scope)?;
                let v = bound(&e.value, scope)?;
                cost = add(cost, add(k.cost, v.cost));
                weight = add(weight, add(add(k.shape.weight, v.shape.weight), 1));
                match &e.key.expr {
                    Expr::Literal(LiteralValue::String(s)) => {
                        fields.insert(s.inner().to_string(), Arc::new(v.shape));
                    }
                    _ => {
                        items = Some(match items {
                            Some(i) => join(&i, &v.shape),
                            None => v.shape,
                        });
                    }
                }
            }
            Ok(Bound {
                cost,
                shape: Shape {
                    len: map.entries.len() as u64,
                    weight,
                    fields,
                    items: items.map(Arc::new),
                    keys: None,
                },
            })
        }
        Expr::Struct(s) => Err(Unbounded::Unsupported(format!(
            "message construction {}",
            s.type_name
        ))),
        Expr::Unspecified => Err(Unbounded::Unsupported("empty expression".into())),
        Expr::Comprehension(c) if is_bind(c) => {
            // `cel.bind`'s shape (an empty range and a false condition): the accumulator is a
            // variable bound to its initial value for the result, as cel-go's `costBind`.
            let mut init = bound(&c.accu_init, scope)?;
            // A two-variable comprehension's second variable, bound to the element at the
            // first: cel-go binds it with the iteration, at no cost.
            if let Expr::Call(call) = &c.accu_init.expr
                && call.func_name == "_[_]"
                && matches!(call.args.first(), Some(IdedExpr { expr: Expr::Ident(n), .. }) if n == library::comprehensions::INPUT)
            {
                init.cost = 0;
            } else if c.accu_var != library::comprehensions::INPUT {
                // cel-go charges the empty range (a list construction) of a bind.
                init.cost = add(init.cost, LIST_CREATE);
            }
            scope.vars.push((c.accu_var.as_str(), init.shape));
            let result = bound(&c.result, scope);
            scope.vars.pop();
            let result = result?;
            Ok(Bound {
                cost: add(init.cost, result.cost),
                shape: result.shape,
            })
        }
        Expr::Comprehension(c) => {
            let range = bound(&c.iter_range, scope)?;
            let init = bound(&c.accu_init, scope)?;
            let n = range.shape.len;
            let elem = range.shape.iteration_entry();
            // How much one step adds to the accumulator: evaluate the step with an empty
            // accumulator, then check the step never more than adds that to a large one.
            let probe = |scope: &mut Scope<'a>, accu: Shape| -> Result<Bound, Unbounded> {
                scope.vars.push((c.iter_var.as_str(), elem.clone()));
                if let Some(v2) = &c.iter_var2 {
                    scope.vars.push((v2.as_str(), range.shape.entry_value()));
                }
                scope.vars.push((c.accu_var.as_str(), accu));
                let out = bound(&c.loop_step, scope);
                scope.vars.pop();
                if c.iter_var2.is_some() {
                    scope.vars.pop();
                }
                scope.vars.pop();
                out
            };
            let first_step = probe(scope, Shape::opaque(0))?.shape;
            let growth = first_step.weight;
            const BIG: u64 = 1 << 40;
            let big = probe(scope, Shape::opaque(BIG))?.shape.weight;
            if big > add(BIG, growth) {
                return Err(Unbounded::Unsupported(
                    "comprehension whose accumulator grows faster than its steps".into(),
                ));
            }
            let accu_weight = add(init.shape.weight, mul(n, growth));
            // What a step appends to a list accumulator (`map`, `filter`) is an item of it.
            let items = match (&init.shape.items, &first_step.items) {
                (Some(a), Some(b)) => Some(Arc::new(join(a, b))),
                (None, Some(b)) if init.shape.len == 0 => Some(b.clone()),
                _ => None,
            };
            let accu = Shape {
                len: add(init.shape.len, n),
                weight: accu_weight,
                fields: BTreeMap::new(),
                items,
                keys: None,
            };
            scope.vars.push((c.iter_var.as_str(), elem.clone()));
            if let Some(v2) = &c.iter_var2 {
                scope.vars.push((v2.as_str(), range.shape.entry_value()));
            }
            scope.vars.push((c.accu_var.as_str(), accu.clone()));
            let cond = bound(&c.loop_cond, scope);
            let step = bound(&c.loop_step, scope);
            let result = bound(&c.result, scope);
            scope.vars.pop();
            if c.iter_var2.is_some() {
                scope.vars.pop();
            }
            scope.vars.pop();
            let (cond, step, result) = (cond?, step?, result?);
            let per_iteration = add(cond.cost, step.cost);
            Ok(Bound {
                cost: add(
                    add(add(range.cost, init.cost), mul(n, per_iteration)),
                    result.cost,
                ),
                shape: result.shape,
            })
        }
        Expr::Call(call) => {
            let mut args = Vec::with_capacity(call.args.len() + 1);
            // A call costs its arguments and its own work (cel-go's `functionCost`).
            let mut cost = 0u64;
            let mut arg_costs = Vec::with_capacity(call.args.len());
            // A library function in a namespace (`sets.contains(a, b)`) is a global call.
            let qualified = match call.target.as_deref() {
                Some(IdedExpr {
                    expr: Expr::Ident(ns),
                    ..
                }) if scope.lookup(ns).is_none()
                    && library::cost::is_qualified(ns, &call.func_name) =>
                {
                    Some(format!("{ns}.{}", call.func_name))
                }
                _ => None,
            };
            let mut exprs: Vec<&IdedExpr> = Vec::with_capacity(call.args.len() + 1);
            if let Some(t) = call.target.as_deref().filter(|_| qualified.is_none()) {
                let b = bound(t, scope)?;
                cost = add(cost, b.cost);
                args.push(b.shape);
                exprs.push(t);
            }
            for a in &call.args {
                let b = bound(a, scope)?;
                cost = add(cost, b.cost);
                arg_costs.push(b.cost);
                args.push(b.shape);
                exprs.push(a);
            }
            // A conditional runs its condition and one branch: the dearer one.
            if call.func_name == "_?_:_"
                && let [c, t, f] = arg_costs.as_slice()
            {
                cost = add(*c, (*t).max(*f));
            }
            // The walk of a two-variable comprehension's keys is its range itself, charged
            // where the target was bound.
            if call.func_name == library::comprehensions::KEYS {
                cost = 0;
            }
            let func_name = qualified.as_deref().unwrap_or(&call.func_name);
            let typed = exprs
                .iter()
                .map(|e| scope.ty(e))
                .collect::<Option<Vec<&Ty>>>();
            let (mut work, shape) = match call_bound(func_name, &args, &exprs) {
                Err(Unbounded::Undeclared(name)) => scope
                    .library
                    .and_then(|library| library(&name, &args))
                    .or_else(|| library::cost::call_cost(&name, &args))
                    .ok_or(Unbounded::Undeclared(name))?,
                other => other?,
            };
            if let Some(types) = &typed
                && let Some(w) = typed_work(func_name, types, &args)
            {
                work = w;
            }
            // `transformMap`/`transformMapEntry` collect `[key, value]` pairs or entries into a
            // list and build the map once; cel-go inserts each into a map accumulator: a map
            // (30, not the list's 10) and per step `cel.@mapInsert(@result, k, v)` or
            // `cel.@mapInsert(@result, entry)` (the call 1 and `@result` 1) where the
            // collection pays the append (1), `@result` (1) and the list literals around the
            // entry (10 each) and the key (1). Charged as cel-go's.
            if let Some(per_step) = map_building_overhead(&call.func_name)
                && let Some(IdedExpr {
                    expr: Expr::Comprehension(c),
                    ..
                }) = call.args.first()
            {
                let n = bound(&c.iter_range, scope)?.shape.len;
                cost = cost.saturating_sub(mul(n, per_step));
                work = MAP_CREATE - LIST_CREATE;
            }
            // A macro's accumulator (`@result`, a name rules cannot spell) is appended to in
            // place by `map`/`filter`: appending costs the new part, not a copy of the whole.
            if call.func_name == "_+_"
                && matches!(call.args.first(), Some(IdedExpr { expr: Expr::Ident(n), .. }) if n.starts_with('@'))
            {
                // Appending to a list accumulator costs cel-go's list concatenation, 1.
                work = match args.get(1) {
                    Some(appended) if appended.items.is_none() => traverse(appended.weight).max(1),
                    _ => 1,
                };
            }
            Ok(Bound {
                cost: add(cost, work),
                shape,
            })
        }
    }
}

/// The work of a call whose cost cel-go (or Kubernetes' estimator) sets by the checked types
/// of its arguments (receiver first), when they tell it; `None` keeps the bound for any type.
fn typed_work(name: &str, types: &[&Ty], args: &[Shape]) -> Option<u64> {
    let len = |i: usize| args.get(i).map_or(0, |s| s.len);
    match (name, types) {
        // `string(x)` scans bytes only: of a string (handed back), a number, a timestamp or a
        // duration it is cel-go's default cost.
        ("string", [t]) if !t.is_dyn() && **t != Ty::Bytes => Some(1),
        // `+` scans strings and bytes and links lists; of numbers, timestamps and durations
        // it is cel-go's default cost.
        ("_+_", [a, b])
            if [a, b]
                .iter()
                .all(|t| !matches!(t, Ty::Dyn | Ty::Str | Ty::Bytes | Ty::List(_))) =>
        {
            Some(1)
        }
        // Orderings of strings and bytes compare up to the shorter size (nothing when it is
        // 0); of numbers, timestamps and durations, the default cost. With a `dyn` operand
        // cel-go takes the dearest candidate overload: the bound for any type.
        ("_<_" | "_<=_" | "_>_" | "_>=_", [a, b]) if !a.is_dyn() && !b.is_dyn() => {
            Some(match (a, b) {
                (Ty::Str, Ty::Str) | (Ty::Bytes, Ty::Bytes) => traverse(len(0).min(len(1))),
                _ => 1,
            })
        }
        // Kubernetes' estimator prices `==` (not `!=`) of two values of one library type.
        ("_==_", [Ty::Opaque(a), Ty::Opaque(b)]) if a == b => {
            library::cost::equality_cost(a, args.get(1)?)
        }
        _ => None,
    }
}

/// `bytes × factor`, rounded up (cel-go's `MultiplyByCostFactor`).
fn scaled(bytes: u64, factor: f64) -> u64 {
    let x = (bytes as f64) * factor;
    if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        x.ceil() as u64
    }
}

/// The cost of scanning `bytes` of a string (cel-go's `StringTraversalCostFactor`, 0.1).
fn traverse(bytes: u64) -> u64 {
    scaled(bytes, 0.1)
}

/// cel-go's `ListCreateBaseCost`: what allocating a list costs beside its elements.
pub(crate) const LIST_CREATE: u64 = 10;
/// cel-go's `MapCreateBaseCost`: what allocating a map costs beside its entries.
const MAP_CREATE: u64 = 30;

/// What our collection of a `transformMap` (pairs) or `transformMapEntry` (entries) step
/// costs beyond cel-go's `cel.@mapInsert` step, for the helper building the map.
fn map_building_overhead(func_name: &str) -> Option<u64> {
    match func_name {
        // `@result + [[k, v]]`: 1 + 10 + 10 + 1 (k) + 1 against `@mapInsert(@result, k, v)`:
        // 1 + 1 + 1 (k).
        library::comprehensions::PAIRS_TO_MAP => Some(20),
        // `@result + [e]`: 1 + 10 + 1 against `@mapInsert(@result, e)`: 1 + 1.
        library::comprehensions::MERGE_MAPS => Some(10),
        _ => None,
    }
}

/// Whether a comprehension is `cel.bind`'s shape: an empty range, a false condition and an
/// accumulator other than a macro's (cel-go's `isBind`).
fn is_bind(c: &cel::common::ast::ComprehensionExpr) -> bool {
    matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty())
        && matches!(
            &c.loop_cond.expr,
            Expr::Literal(LiteralValue::Boolean(b)) if !*b.inner()
        )
        && c.accu_var != "@result"
        && c.accu_var != "__result__"
}

/// A literal int argument as cel-go's `nodeAsUintValue` reads it: its value (0 when
/// negative), or `default` for anything but an int literal.
fn literal_uint(e: Option<&&IdedExpr>, default: u64) -> u64 {
    match e.map(|e| &e.expr) {
        Some(Expr::Literal(LiteralValue::Int(i))) => u64::try_from(*i.inner()).unwrap_or(0),
        _ => default,
    }
}

/// The size of a literal string argument, if it is one.
fn literal_len(e: Option<&&IdedExpr>) -> Option<u64> {
    match e.map(|e| &e.expr) {
        Some(Expr::Literal(LiteralValue::String(s))) => Some(s.inner().chars().count() as u64),
        _ => None,
    }
}

/// Whether a shape is a list's (its items known, no fields).
fn is_list(s: &Shape) -> bool {
    s.items.is_some() && s.fields.is_empty() && s.keys.is_none()
}

/// Whether a shape may be a string's or bytes' (neither items nor fields).
fn is_text(s: &Shape) -> bool {
    s.items.is_none() && s.fields.is_empty()
}

/// `a + b`: lists cost cel-go's 1 (its concatenation is lazy; the engine copies, at most the
/// size the result's later uses are charged for); strings and bytes cost cel-go's
/// `0.1 × (size(a) + size(b))`.
fn concat_cost(a: &Shape, b: &Shape) -> u64 {
    if is_list(a) || is_list(b) {
        1
    } else {
        traverse(add(a.len, b.len))
    }
}

/// The item shape of a list (its whole size when not known).
fn item_of(list: &Shape) -> Shape {
    list.items
        .as_deref()
        .cloned()
        .unwrap_or_else(|| Shape::opaque(list.weight))
}

/// cel-go's list sort estimate: `n²` comparisons at 2, plus the traversal factor for strings
/// and bytes, with the call and the allocation of the result.
fn sort_cost(keys: &Shape) -> u64 {
    let n = keys.len;
    let item = item_of(keys);
    let factor = if is_text(&item) && item.weight > 1 {
        2.1
    } else {
        2.0
    };
    add(scaled(mul(n, n), factor), 1 + LIST_CREATE)
}

/// A list of `len` elements shaped as `item`.
fn list_of(len: u64, item: Shape) -> Shape {
    let weight = add(mul(len, add(item.weight, 1)), 1);
    Shape {
        len,
        weight,
        fields: BTreeMap::new(),
        items: Some(Arc::new(item)),
        keys: None,
    }
}

/// The shape of the index or key a two-variable comprehension binds first.
fn key_of(s: &Shape) -> Shape {
    if let Some(keys) = s.map_keys() {
        keys.clone()
    } else if !s.fields.is_empty() {
        let mut out = Shape::scalar();
        for name in s.fields.keys() {
            out = join(&out, &Shape::opaque(name.len() as u64));
        }
        if let Some(items) = &s.items {
            out = join(&out, items);
        }
        out
    } else if s.items.is_some() {
        Shape::scalar()
    } else {
        Shape::opaque(s.weight)
    }
}

/// The work of a call given its arguments' shapes and expressions (receiver first), and its
/// result's shape. The factors are cel-go's checker (`checker/cost.go`), its list extension
/// at version 3 (`ext/lists.go`) and Kubernetes' `library.CostEstimator` for the string
/// extension at version 2, over sizes measured as the shapes' weights.
fn call_bound(name: &str, args: &[Shape], exprs: &[&IdedExpr]) -> Result<(u64, Shape), Unbounded> {
    // cel-go's size of an argument: characters of a string, items of a list, entries of a map.
    let w = |i: usize| args.get(i).map_or(1, |s| s.len);
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let total: u64 = args.iter().fold(0, |acc, s| add(acc, s.len));
    let scalar = Shape::scalar;
    Ok(match name {
        // Logic and arithmetic on scalars.
        // `&&`, `||` and the conditional cost their arguments only.
        "_&&_" | "_||_" => (0, scalar()),
        "_?_:_" => (0, join(&arg(1), &arg(2))),
        "!_" | "-_" | "@not_strictly_false" | "_-_" | "_*_" | "_/_" | "_%_" => (1, scalar()),
        "_+_" => {
            let (a, b) = (arg(0), arg(1));
            let items = match (&a.items, &b.items) {
                (Some(x), Some(y)) => Some(Arc::new(join(x, y))),
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                _ => None,
            };
            let shape = Shape {
                len: add(a.len, b.len),
                weight: add(a.weight, b.weight),
                fields: BTreeMap::new(),
                items,
                keys: None,
            };
            (concat_cost(&a, &b), shape)
        }
        // Equality and ordering compare up to the smaller side: 0.1 a byte (cel-go charges
        // this for every `==`/`!=` and for orderings of strings and bytes; scalars cost 1).
        "_==_" | "_!=_" => (traverse(w(0).min(w(1))), scalar()),
        // Orderings: of strings and bytes as equality, of anything else 1 (our shapes do not
        // tell an empty string from a number: at least 1 either way).
        "_<_" | "_<=_" | "_>_" | "_>=_" => (traverse(w(0).min(w(1))).max(1), scalar()),
        // Membership in a list costs 1 an element (cel-go's `InList`, whatever the elements);
        // in a map, a lookup at the default cost.
        "@in" => {
            let container = arg(1);
            if container.fields.is_empty() && container.keys.is_none() {
                (container.len, scalar())
            } else {
                (1, scalar())
            }
        }
        // Indexing a list or a map: the default cost.
        "_[_]" => (1, arg(0).entry_value()),
        // The optional library's syntax (Kubernetes enables `cel.OptionalTypes()` since
        // 1.28): `a.?f` selects a field if present, `a[?k]` indexes if present; a call each
        // in cel-go, of the default cost.
        "_?._" => {
            let field = match exprs.get(1).map(|e| &e.expr) {
                Some(Expr::Literal(LiteralValue::String(f))) => arg(0).field(f.inner()),
                _ => arg(0).entry_value(),
            };
            (1, field)
        }
        "_[?_]" => (1, arg(0).entry_value()),
        "size" => (1, scalar()),
        // Timestamps and durations: conversions, accessors and arithmetic at cel-go's default
        // call cost (its estimator does not scale them by their argument).
        "timestamp" | "duration" | "getFullYear" | "getMonth" | "getDayOfYear"
        | "getDayOfMonth" | "getDate" | "getDayOfWeek" | "getHours" | "getMinutes"
        | "getSeconds" | "getMilliseconds" => (1, scalar()),
        // Conversions other than between strings and bytes: the default cost.
        "int" | "uint" | "double" | "bool" | "type" => (1, scalar()),
        "dyn" => (1, args.first().cloned().unwrap_or_else(scalar)),
        // `string(bytes)` and `bytes(string)` scan their argument (cel-go: 0.1 a character);
        // our shapes do not tell a string from bytes, so `string(string)` (1 in cel-go) is
        // charged as `string(bytes)` too; other conversions to string make a short one.
        "string" => (traverse(total).max(1), Shape::opaque(add(total, 32))),
        // A character is at most 4 bytes (cel-go's result size).
        "bytes" => (traverse(total), Shape::opaque(mul(total, 4))),
        // String scans cost a tenth per character (cel-go's StringTraversalCostFactor);
        // `contains` compares the text against the substring.
        "contains" => (mul(traverse(w(0)), traverse(w(1))), scalar()),
        "startsWith" | "endsWith" => (traverse(w(1)), scalar()),
        // On a string, a scan of it (Kubernetes' estimator); on a list, each element compared
        // (1, plus the traversal factor for strings), as the Kubernetes lists library.
        "indexOf" | "lastIndexOf" => {
            let target = arg(0);
            if is_list(&target) {
                let item = item_of(&target);
                let per = if is_text(&item) && item.weight > 1 {
                    add(1, traverse(item.len))
                } else {
                    1
                };
                (mul(target.len, per), scalar())
            } else {
                (traverse(w(0)), scalar())
            }
        }
        // The regex engine runs in time linear in text × pattern: cel-go charges a tenth of
        // (the text's size + 1) times a quarter of the pattern's
        // (`RegexStringLengthCostFactor`).
        "matches" => (mul(traverse(add(w(0), 1)), scaled(w(1), 0.25)), scalar()),
        // Kubernetes' estimator: a scan of the receiver, the result no larger.
        "lowerAscii" | "upperAscii" | "trim" | "substring" => (traverse(w(0)), Shape::opaque(w(0))),
        // cel-go's string extension (version 5) charges the scan and the allocation.
        "charAt" => (add(traverse(w(0)), 2), Shape::opaque(4)),
        // Kubernetes' estimator: the scan and the construction of the result, 0.2 a
        // character of the receiver; the result as long as the most replacements make it.
        "replace" => {
            let (s, with) = (w(0), w(2));
            let out = match literal_len(exprs.get(1)) {
                Some(0) | None => add(mul(add(s, 1), with), s),
                Some(needle) if with <= needle => s,
                Some(needle) => mul(s.div_ceil(needle), with),
            };
            (scaled(s, 0.2), Shape::opaque(out))
        }
        // Kubernetes' estimator: 0.2 a character; at most a part a character, or as many as
        // a literal limit says.
        "split" => {
            let s = w(0);
            let parts = match exprs.get(2).map(|e| &e.expr) {
                // A negative limit (all parts) wraps as Go's `uint64`.
                Some(Expr::Literal(LiteralValue::Int(n))) => {
                    u64::try_from(*n.inner()).unwrap_or(u64::MAX)
                }
                _ => s,
            };
            let shape = Shape {
                len: parts,
                weight: add(mul(add(s, 1), 2), 2),
                fields: BTreeMap::new(),
                items: Some(Arc::new(Shape::opaque(s))),
                keys: None,
            };
            (scaled(s, 0.2), shape)
        }
        // Kubernetes' estimator: a tenth of a character of the joined result, the items and
        // a separator between each two.
        "join" => {
            let list = arg(0);
            let items = mul(list.len, item_of(&list).len);
            let separators = if args.len() > 1 {
                mul(w(1), list.len.saturating_sub(1))
            } else {
                0
            };
            let out = add(items, separators);
            (traverse(out), Shape::opaque(out))
        }
        // cel-go's checker: a scan of the format string (the arguments' rendering is not
        // charged).
        "format" => {
            let out = add(add(w(0), mul(w(1), 4)), 64);
            (traverse(w(0)), Shape::opaque(out))
        }
        "strings.quote" => (traverse(w(0)), Shape::opaque(add(mul(w(0), 2), 2))),
        // cel-go's list extension at version 3: the result's size at factor 1, the call and
        // the list allocation (`estimateAllocatingListCall`).
        "slice" => {
            let list = arg(0);
            let start = literal_uint(exprs.get(1), 0);
            let end = literal_uint(exprs.get(2), list.len);
            // Go's unsigned subtraction wraps when end < start (a call that fails anyway).
            let n = end.checked_sub(start).unwrap_or(u64::MAX);
            let shape = Shape {
                len: n.min(list.len),
                ..list
            };
            (add(n, 1 + LIST_CREATE), shape)
        }
        "flatten" => {
            let list = arg(0);
            let depth = if exprs.len() > 1 {
                literal_uint(exprs.get(1), u64::MAX)
            } else {
                1
            };
            // The result holds at most one element per node of the list, each an item at
            // some level down to the depth.
            let mut item = item_of(&list);
            let mut level = item.clone();
            for _ in 0..depth.min(16) {
                match level.items.as_deref().cloned() {
                    Some(inner) => {
                        item = join(&item, &inner);
                        level = inner;
                    }
                    None => break,
                }
            }
            let shape = Shape {
                len: list.weight,
                weight: list.weight,
                fields: BTreeMap::new(),
                items: Some(Arc::new(item)),
                keys: None,
            };
            (add(mul(depth, list.len), 1 + LIST_CREATE), shape)
        }
        "lists.range" => {
            let n = literal_uint(exprs.first(), u64::MAX);
            (add(n, 1 + LIST_CREATE), list_of(n, scalar()))
        }
        "reverse" => {
            let list = arg(0);
            (add(list.len, 1 + LIST_CREATE), list)
        }
        "distinct" => {
            let list = arg(0);
            (
                add(scaled(mul(list.len, list.len), 2.0), 1 + LIST_CREATE),
                list,
            )
        }
        "sort" => {
            let list = arg(0);
            (sort_cost(&list), list)
        }
        // `sortBy`'s expansion: the sort runs over the keys.
        "@sortByAssociatedKeys" => (sort_cost(&arg(1)), arg(0)),
        // The optional library's list functions (no estimator upstream: 1); unwrapping walks
        // the list.
        "first" | "last" => (1, item_of(&arg(0))),
        "unwrapOpt" | "optional.unwrap" => (arg(0).len.max(1), arg(0)),
        // Two-variable comprehensions: the indices or keys the loop walks.
        super::library::comprehensions::KEYS => {
            let target = arg(0);
            (0, list_of(target.len, key_of(&target)))
        }
        // The map of `transformMap`/`transformMapEntry`, built once from the entries its loop
        // collected (cel-go inserts at each step, at 1 each: charged there as the appends).
        super::library::comprehensions::PAIRS_TO_MAP
        | super::library::comprehensions::MERGE_MAPS => {
            let list = arg(0);
            let entry = item_of(&list);
            let value = entry.any_entry();
            let shape = Shape {
                len: list.len,
                weight: list.weight,
                fields: BTreeMap::new(),
                items: Some(Arc::new(value)),
                keys: None,
            };
            (1, shape)
        }
        other => return Err(Unbounded::Undeclared(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cost_of(rule: &str, value: &Value) -> Result<u64, Unbounded> {
        let program = cel::Env::stdlib().compile(rule).expect("compiles");
        estimate(program.expression(), &[("self", Shape::of_json(value))])
    }

    #[test]
    fn simple_rules_are_cheap() {
        let c = cost_of("self.replicas <= 10", &json!({"replicas": 3})).expect("bounded");
        assert!(c < 20, "{c}");
    }

    #[test]
    fn nested_comprehensions_multiply() {
        let small: Vec<i64> = (0..10).collect();
        let big: Vec<i64> = (0..1000).collect();
        let rule = "self.all(x, self.all(y, self.all(z, x + y + z >= 0)))";
        let c_small = cost_of(rule, &json!(small)).expect("bounded");
        let c_big = cost_of(rule, &json!(big)).expect("bounded");
        assert!(c_small < 100_000, "{c_small}");
        assert!(c_big > 1_000_000_000, "{c_big}");
    }

    #[test]
    fn map_accumulators_count_their_growth() {
        let list: Vec<i64> = (0..100).collect();
        let c = cost_of("self.map(x, self.map(y, y)).size() > 0", &json!(list)).expect("ok");
        // 100 outer × (100 inner × accumulator copies) at least.
        assert!(c > 100 * 100, "{c}");
    }

    #[test]
    fn string_growth_is_bounded() {
        let c = cost_of(
            "self.s.replace('a', self.s).replace('a', self.s).size() > 0",
            &json!({"s": "a".repeat(1000)}),
        )
        .expect("bounded");
        // Kubernetes' replace estimate: 0.2 a character of the receiver, the result up to
        // 1000 replacements of 1000 characters. self.s 2 + self.s 2 + ceil(0.2 × 1000) = 204;
        // then 204 + 2 + ceil(0.2 × 1 000 000) = 200 206; size 1, `>` 1.
        assert_eq!(c, 200_208);
    }

    #[test]
    fn unknown_functions_are_refused() {
        assert_eq!(
            cost_of("nope(self)", &json!(1)),
            Err(Unbounded::Undeclared("nope".into()))
        );
        assert_eq!(
            cost_of("other > 1", &json!(1)),
            Err(Unbounded::Undeclared("other".into()))
        );
    }

    /// A map's key shape has a field of its own: data whose key is any name, even the one
    /// the key shape was once kept under among the fields, is an entry like any other.
    #[test]
    fn map_keys_are_not_a_field() {
        let value = "v".repeat(1000);
        let rule = "self.all(k, k + k == '')";
        let odd = cost_of(rule, &json!({"\u{0}keys": value})).expect("bounded");
        let plain = cost_of(rule, &json!({"abcde": value})).expect("bounded");
        assert_eq!(odd, plain);
        let schema = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let shape = Shape::of_schema(&schema);
        assert!(shape.fields.is_empty(), "{shape:?}");
        assert_eq!(shape.map_keys().map(|k| k.len), Some(0));
    }

    #[test]
    fn schema_bounds_drive_the_static_estimate() {
        let bounded = json!({"type": "array", "maxItems": 10, "items": {"type": "integer"}});
        let unbounded = json!({"type": "array", "items": {"type": "integer"}});
        let program = cel::Env::stdlib()
            .compile("self.all(x, self.all(y, x != y))")
            .expect("compiles");
        let b = estimate(
            program.expression(),
            &[("self", Shape::of_schema(&bounded))],
        )
        .expect("bounded");
        let u = estimate(
            program.expression(),
            &[("self", Shape::of_schema(&unbounded))],
        )
        .expect("bounded");
        assert!(b < 10_000, "{b}");
        assert!(u > 100_000_000, "{u}");
    }
}

#[cfg(test)]
mod upstream_estimates {
    //! Static estimates against cel-go's, computed by hand from its formulas (`checker/cost.go`,
    //! `ext/lists.go` at version 3, `ext/comprehensions.go`, Kubernetes' `library/cost.go`)
    //! over the sizes Kubernetes gives schema nodes (`apiserver/pkg/cel/common/schemas.go`:
    //! a string 4 × `maxLength`, numbers and objects 0, unbounded lists and maps what a 3 MiB
    //! request holds): identifiers and selections 1, constants 0, a call its arguments plus
    //! its own cost.

    use serde_json::{Value, json};

    use super::*;
    use crate::validation::cel::compile::{env, parse_in};

    fn schema() -> Value {
        let text = |n: u64| json!({"type": "string", "maxLength": n});
        json!({"type": "object", "properties": {
            "a": text(1000), "b": text(1000), "x": {"type": "integer"},
            "l": {"type": "array", "maxItems": 100, "items": {"type": "integer"}},
            "big": {"type": "array", "maxItems": 500, "items": {"type": "integer"}},
            "names": {"type": "array", "maxItems": 10, "items": text(20)},
            "m": {"type": "object", "maxProperties": 20, "additionalProperties": text(10)},
            "um": {"type": "object", "additionalProperties": {"type": "integer"}},
            "ul": {"type": "array", "items": {"type": "string"}},
            "objs": {"type": "array", "items": {"type": "object",
                "required": ["name"], "properties": {"name": {"type": "string"}}}},
            "e": {"type": "string", "enum": ["short", "longer-value"]},
            "t": {"type": "string", "format": "date-time"},
            "ios": {"x-kubernetes-int-or-string": true, "maxLength": 5},
            "o": {"type": "object", "properties": {"p": text(10)}},
        }})
    }

    /// The static estimate of `rule` as a CRD rule gets it: type-checked against the schema.
    fn estimate_of(rule: &str) -> Result<u64, Unbounded> {
        let program = parse_in(env(), rule).expect("parses");
        let self_ty = crate::validation::cel::check::schema::self_type(&schema(), false);
        let (_, types) =
            crate::validation::cel::check::check_typed(&program, rule, &[("self", self_ty)])
                .unwrap_or_else(|e| panic!("{rule}: {e}"));
        estimate_typed(
            program.expression(),
            &[("self", Shape::of_schema(&schema()))],
            &types,
        )
    }

    /// The estimate of `rule` without its types: the bound for values of any type.
    fn untyped_estimate_of(rule: &str) -> Result<u64, Unbounded> {
        let program = parse_in(env(), rule).expect("parses");
        estimate(
            program.expression(),
            &[("self", Shape::of_schema(&schema()))],
        )
    }

    /// Where cel-go's cost depends on the checked types, the typed estimate is cel-go's; the
    /// untyped one (admission expressions, runtime bounds) stays an upper bound.
    #[test]
    fn costs_that_depend_on_types_at_cel_go_factors() {
        for (rule, expected, untyped) in [
            // `string(string)` is cel-go's `string_to_string`, default cost 1 (not a scan):
            // self.a 2 + 1 + `==` ceil(0.1 × min(unknown, 1)) = 1.
            ("string(self.a) == 'x'", 4, 403),
            // `string(bytes)` scans: 2 + bytes() ceil(0.1 × 4000) + string() ceil(0.1 × 4 ×
            // 4000) + `==` 1.
            ("string(bytes(self.a)) == 'x'", 2003, 2003),
            // Ordering of strings: 0.1 × the smaller size, nothing for an empty literal:
            // self.a 2 + 0.
            ("'' < self.a", 2, 3),
            // Ordering of timestamps (32 bytes each as JSON) is `less_timestamp`, 1: 2 + 2 + 1.
            ("self.t < self.t", 5, 8),
            // `string(timestamp)` is the default 1: 2 + 1 + `==` 1.
            ("string(self.t) == 'x'", 4, 7),
            // A timestamp plus a duration is `add_timestamp_duration`, 1: self.t 2 +
            // duration('1s') 1 + 1, then `>` 1 + self.t 2.
            ("self.t + duration('1s') > self.t", 7, 13),
            // Of ints and doubles, 1: 2 + 1.
            ("self.x < 1.5", 3, 3),
            // Kubernetes' estimator: `==` of two quantities, IPs or CIDRs is 1. self.o.p 3 +
            // quantity() ceil(0.1 × 40) = 4 + quantity('1') ceil(0.1 × 1) = 1 + 1.
            ("quantity(self.o.p) == quantity('1')", 9, 15),
            // self.o.p 3 + ip() 4 + ip('1.2.3.4') ceil(0.7) = 1 + 1.
            ("ip(self.o.p) == ip('1.2.3.4')", 9, 15),
            // self.o.p 3 + cidr() 4 + cidr('10.0.0.0/8') ceil(1.0) = 1 + 1.
            ("cidr(self.o.p) == cidr('10.0.0.0/8')", 9, 15),
            // Two named formats: ceil(0.1 × MaxFormatSize 64) = 7; each format 1.
            ("format.dns1123Label() == format.uri()", 9, 9),
            // A selection on `dyn` costs nothing (cel-go's `costSelect` charges maps and
            // objects only): self.o 2 + dyn() 1 + .p 0 + size() 1 + `>` 1.
            ("dyn(self.o).p.size() > 0", 5, 6),
            // Nor on an optional: self 1 + `_?._` 1 + .p 0 + hasValue() 1.
            ("self.?o.p.hasValue()", 3, 4),
        ] {
            assert_eq!(estimate_of(rule), Ok(expected), "{rule}");
            assert_eq!(untyped_estimate_of(rule), Ok(untyped), "{rule} (untyped)");
        }
    }

    #[test]
    fn core_operators_at_cel_go_factors() {
        for (rule, expected) in [
            // self.a (2) + self.b (2) + ceil(0.1 × min(4 × 1000, 4 × 1000)).
            ("self.a == self.b", 404),
            ("self.a != self.b", 404),
            ("self.a < self.b", 404),
            // Concatenation: 4 + ceil(0.1 × 8000) = 804; `==` against 'x': ceil(0.1 × 1).
            ("self.a + self.b == 'x'", 805),
            // bytes(): 2 + ceil(0.1 × 4000); size() 1; `>` on ints 1.
            ("bytes(self.a).size() > 0", 404),
            // `in` a list: 1 per element: 2 + 2 + 500.
            ("self.x in self.big", 504),
            // An integer field's size is 0 (its path's MaxElements): 2 + 0 + ceil(0.1 × 0).
            ("self.x == 1", 2),
            // An ordering of ints is 1 whatever the sizes: 2 + 1.
            ("self.x < 1", 3),
            // `&&`/`||` cost their arguments; the conditional its dearer branch.
            ("self.x == 1 && self.x == 2", 4),
            ("self.x == 1 ? self.a == self.b : false", 406),
            // has() costs nothing beside its operand.
            ("has(self.a)", 1),
            // List literal 10, map literal 30.
            ("[1, 2, 3] == [1]", 21),
            ("{'k': 1}.size() == 1", 32),
            // type() and int() are 1 (not a scan of the argument): 2 + 1 + `==` 0 (the type
            // ident's size is unknown, the field's 0) + ident 1.
            ("type(self.x) == int", 4),
            // A qualified type name is an identifier once checked: 1, its size the root's (0).
            ("type(self.t) == google.protobuf.Timestamp", 4),
            ("type(self.t) == net.IP", 4),
            ("int(self.a) > 0", 4),
            // Formats: a date-time is 32 (MaxDatetimeSizeJSON): 4 + ceil(3.2); an enum its
            // longest value: 4 + ceil(1.2); an int-or-string 4 × maxLength: 4 + ceil(2).
            ("self.t == self.t", 8),
            ("self.e == self.e", 6),
            ("self.ios == self.ios", 6),
            // An object's size is 0: 4 + 0.
            ("self.o == self.o", 4),
        ] {
            assert_eq!(estimate_of(rule), Ok(expected), "{rule}");
        }
    }

    #[test]
    fn lists_and_maps_at_cel_go_factors() {
        for (rule, expected) in [
            // List equality compares up to the shorter list's items (not bytes):
            // 2 + 2 + ceil(0.1 × min(100, 500)).
            ("self.l == self.big", 14),
            // List concatenation is 1 (cel-go's lazy `AddList`), the result 600 items:
            // 2 + 2 + 1, size 1, `>` 1.
            ("(self.l + self.big).size() > 0", 7),
            // `==` on the concatenation: 5 + 2 + ceil(0.1 × min(600, 100)).
            ("self.l + self.big == self.l", 17),
            // Unbounded lists: (3 MiB - 2) / (min size + 1): strings (2) 1 048 575;
            // 4 + ceil(104 857.5).
            ("self.ul == self.ul", 104_862),
            // Objects whose required `name` has no default: {} + "name" + "" + 4 = 12;
            // (3 145 726) / 13 = 241 978: 4 + ceil(24 197.8).
            ("self.objs == self.objs", 24_202),
            // Unbounded maps: (3 MiB - 2) / (min size + 6): integers (1) 449 389.
            ("self.um == self.um", 44_943),
            // `in` a map is a lookup, 1: 2 + 0 + 1.
            ("'k' in self.m", 3),
            // Indexing 1, the value 4 × 10: `==` 'v' ceil(0.1 × 1).
            ("self.m['k'] == 'v'", 4),
            // Keys of a schema map have size 0 (the key type's MaxElements): all() over 20
            // keys: range 2, init 0, 20 × (cond `@not_strictly_false(@result)` 2 + step
            // (`@result` 1 + k 1 + matches ceil(0.1 × (0 + 1)) × ceil(0.25 × 2) = 1)),
            // result 1.
            ("self.m.all(k, k.matches('^a'))", 2 + 20 * (2 + 3) + 1),
            // size() on a key: 1; `<=` 1.
            (
                "self.m.all(k, k.size() <= 63)",
                2 + 20 * (2 + 1 + 1 + 1 + 1) + 1,
            ),
        ] {
            assert_eq!(estimate_of(rule), Ok(expected), "{rule}");
        }
    }

    #[test]
    fn label_keys_of_an_unbounded_map_at_cel_go_sizes() {
        // The map of tests/cel.rs' `label_key_rules_of_unbounded_maps_are_accepted`: string
        // values (min size 2), (3 MiB - 2) / 8 = 393 215 entries, keys of size 0. self.labels
        // 2, init 0, per key cond 2 + step (@result 1 + k 1 + matches ceil(0.1 × (0 + 1)) ×
        // ceil(0.25 × 31) = 8), result 1.
        let schema = json!({"type": "object", "properties": {"labels": {"type": "object",
            "additionalProperties": {"type": "string"}}}});
        let program = parse_in(env(), LABEL_KEY_RULE).expect("parses");
        let c = estimate(program.expression(), &[("self", Shape::of_schema(&schema))]);
        assert_eq!(c, Ok(2 + 393_215 * 12 + 1));
    }

    /// A rule on the keys of a label map (its pattern 31 characters).
    const LABEL_KEY_RULE: &str = "self.labels.all(k, k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))";

    #[test]
    fn string_extension_at_kubernetes_factors() {
        for (rule, expected) in [
            // lowerAscii: ceil(0.1 × 4000) + 2; `==` 'x': 1.
            ("self.a.lowerAscii() == 'x'", 403),
            ("self.a.trim() == 'x'", 403),
            // replace: ceil(0.2 × 4000) + 2; the result no longer than 4000 ('' is no longer
            // than '-'); `!=` '' (size 0): 0.
            ("self.a.replace('-', '') != ''", 802),
            // split: ceil(0.2 × 4000) + 2; size 1; `<=` 1.
            ("self.a.split(',').size() <= 10", 804),
            // indexOf on a string: ceil(0.1 × 4000) + 2; `>=` 1.
            ("self.a.indexOf('x') >= 0", 403),
            // startsWith: ceil(0.1 × size of the prefix (3)) + 2.
            ("self.a.startsWith('abc')", 3),
            // join: ceil(0.1 × (10 × 80 + 1 × 9)) + 2; `==` '' 0.
            ("self.names.join(',') == ''", 83),
        ] {
            assert_eq!(estimate_of(rule), Ok(expected), "{rule}");
        }
    }

    #[test]
    fn list_extension_at_cel_go_factors() {
        for (rule, expected) in [
            // slice(1, 3): (3 - 1) + 1 + 10, plus self.l (2); size 1; `==` 1.
            ("self.l.slice(1, 3).size() == 2", 17),
            // distinct: 2 × 100² + 11 + 2; size 1; `>` 1.
            ("self.l.distinct().size() > 0", 20_015),
            // sort: 2 × 100² + 11 + 2; index 1; `>=` 1.
            ("self.l.sort()[0] >= 0", 20_015),
            // sort of strings: 2.1 × 10² + 11 + 2; index 1; `!=` '' 0.
            ("self.names.sort()[0] != ''", 224),
            // reverse: 100 + 11 + 2; size; `>`.
            ("self.l.reverse().size() > 0", 115),
            // flatten: depth 1 × 100 + 11 + 2; flatten(2): 200 + 11 + 2.
            ("self.l.flatten().size() > 0", 115),
            ("self.l.flatten(2).size() > 0", 215),
            // lists.range(5): 5 + 11; size; `==`.
            ("lists.range(5).size() == 5", 18),
            // sortBy: the bound target, the receiver (1), the key list as cel-go's map macro
            // (range 1, init 10, 100 × (cond 0 + step (@result 1 + [-x] (10 + 2) + 1)),
            // result 1) and the sort of the keys: 2 × 100² + 11.
            // The bind cel-go charges its empty range (10) beside the target (2).
            (
                "self.l.sortBy(x, -x).size() > 0",
                10 + 2 + 1 + (1 + 10 + 100 * 14 + 1) + 20_011 + 1 + 1,
            ),
            // first(): 1 + 2; hasValue 1.
            ("self.l.first().hasValue()", 4),
            // Kubernetes' lists library: 1 an element, plus 0.1 a character of strings:
            // 100 × 1 + 2; 10 × (1 + ceil(0.1 × 80)) + 2.
            ("self.l.isSorted()", 102),
            ("self.names.isSorted()", 92),
        ] {
            assert_eq!(estimate_of(rule), Ok(expected), "{rule}");
        }
    }

    #[test]
    fn two_variable_comprehensions_at_cel_go_factors() {
        // Range self.l (2), init 0, 100 × (cond 2 + step (@result 1 + `i == 0` 2 + `v >= ...`
        // (v 1 + self.l 2 + `i - 1` 2 + index 1 + 1))), result 1.
        assert_eq!(
            estimate_of("self.l.all(i, v, i == 0 || v >= self.l[i - 1])"),
            Ok(3 + 100 * 12)
        );
        // exists: cond `@not_strictly_false(!@result)` 3; `v == i` 2 (v, an item of an
        // integer list, has size 0): step 1 + 2.
        assert_eq!(estimate_of("self.l.exists(i, v, v == i)"), Ok(3 + 100 * 6));
        // transformMap: range 2, init `{}` 30, 500 × (cond `true` 0 + step
        // `cel.@mapInsert(@result, i, v)` 1 + 1 + 1 + 1), result 1; size 1; `>` 1.
        assert_eq!(
            estimate_of("self.big.transformMap(i, v, v).size() > 0"),
            Ok(2 + 30 + 500 * 4 + 1 + 1 + 1)
        );
        // With a filter: step `v > 0 ? @mapInsert(...) : @result`: (v 1 + `>` 1) + 4.
        assert_eq!(
            estimate_of("self.big.transformMap(i, v, v > 0, v).size() > 0"),
            Ok(2 + 30 + 500 * 6 + 1 + 1 + 1)
        );
        // transformMapEntry: step `cel.@mapInsert(@result, {v: i})`: 1 + 1 + (30 + 1 + 1).
        assert_eq!(
            estimate_of("self.big.transformMapEntry(i, v, {v: i}).size() > 0"),
            Ok(2 + 30 + 500 * 34 + 1 + 1 + 1)
        );
        // Over a map: keys and values of the 20 entries; `k + v` 1 + 1 + ceil(0.1 × 40).
        assert_eq!(
            estimate_of("self.m.transformMap(k, v, k + v).size() > 0"),
            Ok(2 + 30 + 20 * (3 + 6) + 1 + 1 + 1)
        );
    }
}
