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
//! iteration. Sizes are the shapes' weights, which bound cel-go's sizes from above: where the
//! engine does more work than cel-go's implementation (it copies lists it concatenates and
//! maps it inserts into), that work is charged too. Functions outside the table below and the
//! Kubernetes libraries' ([`library::cost`]) are refused when the rule is compiled, so no
//! call escapes the bound.

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

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
        let mut out = match &self.items {
            Some(items) => (**items).clone(),
            None if self.fields.is_empty() => Shape::opaque(self.weight),
            None => Shape::default(),
        };
        for (name, f) in &self.fields {
            out = join(&out, f);
            out = join(&out, &Shape::opaque(name.len() as u64));
        }
        out
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
    let items = match (&a.items, &b.items) {
        (Some(x), Some(y)) => Some(Arc::new(join(x, y))),
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (None, None) => None,
    };
    Shape {
        len: a.len.max(b.len),
        weight: a.weight.max(b.weight),
        fields,
        items,
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
            }
        }
        _ => Shape::scalar(),
    }
}

/// The fewest bytes a value of this schema takes in a request (upstream's minimum serialized
/// size, used to bound unbounded lists and maps).
fn min_size(schema: &Value) -> u64 {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => 3,
        Some("boolean") => 5,
        Some("integer") | Some("number") => 2,
        Some("array") | Some("object") => 3,
        _ => 2,
    }
}

fn shape_of_schema(schema: &Value, depth: usize) -> Shape {
    if depth > MAX_DEPTH
        || schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true)
        || schema
            .get("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            == Some(true)
    {
        return Shape::opaque(MAX_REQUEST_BYTES);
    }
    let max = |k: &str| schema.get(k).and_then(Value::as_u64);
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => {
            // Sized in characters, as upstream's estimator sizes strings (`size()`); at
            // evaluation the actual bytes bound the cost.
            let len = max("maxLength")
                .or_else(|| fixed_format_len(schema))
                .unwrap_or(MAX_REQUEST_BYTES)
                .min(MAX_REQUEST_BYTES);
            Shape::opaque(len)
        }
        Some("array") => {
            let items = schema
                .get("items")
                .map(|i| shape_of_schema(i, depth + 1))
                .unwrap_or_else(|| Shape::opaque(MAX_REQUEST_BYTES));
            let unbounded = MAX_REQUEST_BYTES / schema.get("items").map_or(2, min_size).max(1);
            let len = max("maxItems").unwrap_or(unbounded).min(unbounded);
            let weight = len
                .saturating_mul(items.weight.saturating_add(1))
                .saturating_add(1)
                .min(MAX_REQUEST_BYTES);
            Shape {
                len,
                weight,
                fields: BTreeMap::new(),
                items: Some(Arc::new(items)),
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
            let mut len = fields.len() as u64;
            let mut items = None;
            match schema.get("additionalProperties") {
                Some(add @ Value::Object(_)) => {
                    let values = shape_of_schema(add, depth + 1);
                    let unbounded = MAX_REQUEST_BYTES / (min_size(add) + 3);
                    len = max("maxProperties").unwrap_or(unbounded).min(unbounded);
                    weight = len
                        .saturating_mul(values.weight.saturating_add(MAX_KEY_BYTES))
                        .saturating_add(1);
                    items = Some(Arc::new(values));
                }
                Some(Value::Bool(true)) => return Shape::opaque(MAX_REQUEST_BYTES),
                _ => {}
            }
            if schema.get("type").is_none() && fields.is_empty() && items.is_none() {
                return Shape::opaque(MAX_REQUEST_BYTES);
            }
            Shape {
                len: len.max(1),
                weight: weight.min(MAX_REQUEST_BYTES),
                fields,
                items,
            }
        }
        _ => Shape::scalar(),
    }
}

/// Map keys are strings without a declared bound; assume a generous one for the weight.
const MAX_KEY_BYTES: u64 = 256;

fn fixed_format_len(schema: &Value) -> Option<u64> {
    match schema.get("format").and_then(Value::as_str)? {
        "date" => Some(10),
        "date-time" | "datetime" => Some(64),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => Some(36),
        "ipv4" => Some(15),
        "ipv6" => Some(45),
        "byte" | "duration" => None,
        _ => None,
    }
}

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
}

impl Scope<'_> {
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
            None if super::check::TYPE_NAMES.contains(&name.as_str()) => Ok(Bound {
                cost: 1,
                shape: Shape::scalar(),
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
            // A library type name (`net.IP`).
            if let Expr::Ident(ns) = &sel.operand.expr
                && scope.lookup(ns).is_none()
                && library::cost::is_qualified(ns, &sel.field)
            {
                return Ok(Bound {
                    cost: 1,
                    shape: Shape::scalar(),
                });
            }
            let operand = bound(&sel.operand, scope)?;
            let shape = if sel.test {
                Shape::scalar()
            } else {
                operand.shape.field(&sel.field)
            };
            // `has()` costs nothing beside its operand (Kubernetes sets cel-go's
            // `PresenceTestHasCost(false)`); a field selection costs 1.
            Ok(Bound {
                cost: if sel.test {
                    operand.cost
                } else {
                    add(operand.cost, 1)
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
            let elem = range.shape.any_entry();
            // How much one step adds to the accumulator: evaluate the step with an empty
            // accumulator, then check the step never more than adds that to a large one.
            let probe = |scope: &mut Scope<'a>, accu: Shape| -> Result<Bound, Unbounded> {
                scope.vars.push((c.iter_var.as_str(), elem.clone()));
                if let Some(v2) = &c.iter_var2 {
                    scope.vars.push((v2.as_str(), range.shape.any_entry()));
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
            };
            scope.vars.push((c.iter_var.as_str(), elem.clone()));
            if let Some(v2) = &c.iter_var2 {
                scope.vars.push((v2.as_str(), range.shape.any_entry()));
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
            let (mut work, shape) = match call_bound(func_name, &args, &exprs) {
                Err(Unbounded::Undeclared(name)) => scope
                    .library
                    .and_then(|library| library(&name, &args))
                    .or_else(|| library::cost::call_cost(&name, &args))
                    .ok_or(Unbounded::Undeclared(name))?,
                other => other?,
            };
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
    s.items.is_some() && s.fields.is_empty()
}

/// Whether a shape may be a string's or bytes' (neither items nor fields).
fn is_text(s: &Shape) -> bool {
    s.items.is_none() && s.fields.is_empty()
}

/// `a + b`: lists are concatenated by copying their elements (the engine has no lazy
/// concatenation as cel-go's, which charges 1), so the copy costs the traversal factor per
/// element; strings and bytes cost cel-go's `0.1 × (size(a) + size(b))`.
fn concat_cost(a: &Shape, b: &Shape) -> u64 {
    if is_list(a) || is_list(b) {
        add(1, traverse(add(a.len, b.len)))
    } else {
        traverse(add(a.weight, b.weight)).max(1)
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
    }
}

/// The shape of the index or key a two-variable comprehension binds first.
fn key_of(s: &Shape) -> Shape {
    if !s.fields.is_empty() {
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
    let w = |i: usize| args.get(i).map_or(1, |s| s.weight);
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let total: u64 = args.iter().fold(0, |acc, s| add(acc, s.weight));
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
            };
            (concat_cost(&a, &b), shape)
        }
        // Equality and ordering compare up to the smaller side: 0.1 a byte (cel-go charges
        // this for every `==`/`!=` and for orderings of strings and bytes; scalars cost 1).
        "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => (traverse(w(0).min(w(1))), scalar()),
        // Membership in a list compares with each element (cel-go: 1 each); a map looks the
        // key up.
        "@in" => {
            let (needle, container) = (arg(0), arg(1));
            if container.fields.is_empty() {
                let item = item_of(&container);
                let per = traverse(item.weight.min(needle.weight)).max(1);
                (mul(container.len.max(1), per), scalar())
            } else {
                (traverse(needle.weight).max(1), scalar())
            }
        }
        "_[_]" => (traverse(w(1)).max(1), arg(0).any_entry()),
        // The optional library's syntax (Kubernetes enables `cel.OptionalTypes()` since
        // 1.28): `a.?f` selects a field if present, `a[?k]` indexes if present; a call each
        // in cel-go, of the default cost.
        "_?._" => {
            let field = match exprs.get(1).map(|e| &e.expr) {
                Some(Expr::Literal(LiteralValue::String(f))) => arg(0).field(f.inner()),
                _ => arg(0).any_entry(),
            };
            (1, field)
        }
        "_[?_]" => (traverse(w(1)).max(1), arg(0).any_entry()),
        "size" => (1, scalar()),
        // Timestamps and durations: conversions, accessors and arithmetic at cel-go's default
        // call cost (its estimator does not scale them by their argument).
        "timestamp" | "duration" | "getFullYear" | "getMonth" | "getDayOfYear"
        | "getDayOfMonth" | "getDate" | "getDayOfWeek" | "getHours" | "getMinutes"
        | "getSeconds" | "getMilliseconds" => (1, scalar()),
        "int" | "uint" | "double" | "bool" | "type" => (traverse(total).max(1), scalar()),
        "dyn" => (1, args.first().cloned().unwrap_or_else(scalar)),
        // `string(bytes)` and `bytes(string)` scan their argument (cel-go: 0.1 a byte); other
        // conversions to string make a short one.
        "string" | "bytes" => (traverse(total).max(1), Shape::opaque(add(total, 32))),
        // String scans cost a tenth per byte (cel-go's StringTraversalCostFactor);
        // `contains` compares the text against the substring.
        "contains" => (mul(traverse(w(0)), traverse(w(1))).max(1), scalar()),
        "startsWith" | "endsWith" => (traverse(w(1)).max(1), scalar()),
        // On a string, a scan of it (Kubernetes' estimator); on a list, each element compared
        // (1, plus the traversal factor for strings), as the Kubernetes lists library.
        "indexOf" | "lastIndexOf" => {
            let target = arg(0);
            if is_list(&target) {
                let item = item_of(&target);
                let per = if is_text(&item) && item.weight > 1 {
                    add(1, traverse(item.weight))
                } else {
                    1
                };
                (mul(target.len.max(1), per), scalar())
            } else {
                (traverse(w(0)).max(1), scalar())
            }
        }
        // The regex engine runs in time linear in text × pattern: text scan × pattern (cel-go: RegexStringLengthCostFactor, a quarter per byte).
        "matches" => (
            mul(traverse(add(w(0), 1)), scaled(w(1), 0.25).max(1)),
            scalar(),
        ),
        // Kubernetes' estimator: a scan of the receiver, the result no larger.
        "lowerAscii" | "upperAscii" | "trim" | "substring" => {
            (traverse(w(0)).max(1), Shape::opaque(w(0)))
        }
        // cel-go's string extension (version 5) charges the scan and the allocation.
        "charAt" => (add(traverse(w(0)), 2), Shape::opaque(4)),
        // Kubernetes' estimator: the scan and the construction of the result, 0.2 a byte of
        // the receiver; a result longer than the receiver is charged for its construction.
        "replace" => {
            let (s, with) = (w(0), w(2));
            let out = match literal_len(exprs.get(1)) {
                Some(0) | None => add(mul(add(s, 1), with), s),
                Some(needle) if with <= needle => s,
                Some(needle) => add(mul(s.div_ceil(needle), with), s),
            };
            (scaled(s, 0.2).max(traverse(out)).max(1), Shape::opaque(out))
        }
        "split" => {
            let s = w(0);
            let shape = Shape {
                len: add(s, 1),
                weight: add(mul(s, 2), 2),
                fields: BTreeMap::new(),
                items: Some(Arc::new(Shape::opaque(s))),
            };
            (scaled(s, 0.2).max(1), shape)
        }
        // Kubernetes' estimator: a tenth of a byte of the joined result.
        "join" => {
            let list = arg(0);
            let out = add(list.weight, mul(list.len, w(1)));
            (traverse(out).max(1), Shape::opaque(out))
        }
        // cel-go's checker: a scan of the format string; the arguments are rendered too.
        "format" => {
            let out = add(add(w(0), mul(w(1), 4)), 64);
            (
                add(traverse(w(0)), traverse(w(1))).max(1),
                Shape::opaque(out),
            )
        }
        "strings.quote" => (traverse(w(0)).max(1), Shape::opaque(add(mul(w(0), 2), 2))),
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
        // The second result can hold a billion bytes: building it is charged at the
        // traversal factor, far over the per-call limit.
        assert!(c > 100_000_000, "{c}");
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
    //! `ext/lists.go` at version 3, Kubernetes' `library/cost.go`): identifiers and selections
    //! 1, constants 0, a call its arguments plus its own cost.

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
        }})
    }

    fn estimate_of(rule: &str) -> Result<u64, Unbounded> {
        let program = parse_in(env(), rule).expect("parses");
        estimate(
            program.expression(),
            &[("self", Shape::of_schema(&schema()))],
        )
    }

    #[test]
    fn core_operators_at_cel_go_factors() {
        for (rule, expected) in [
            // self.a (2) + self.b (2) + ceil(0.1 × min(1000, 1000)).
            ("self.a == self.b", 104),
            ("self.a != self.b", 104),
            ("self.a < self.b", 104),
            // Concatenation: 4 + ceil(0.1 × 2000) = 204; `==` against 'x': ceil(0.1 × 1).
            ("self.a + self.b == 'x'", 205),
            // bytes(): 2 + ceil(0.1 × 1000); size() 1; `>` on ints 1.
            ("bytes(self.a).size() > 0", 104),
            // `in` a list: 1 per element: 2 + 2 + 500.
            ("self.x in self.big", 504),
            // Scalars: 2 + 0 + 1.
            ("self.x == 1", 3),
            // `&&`/`||` cost their arguments; the conditional its dearer branch.
            ("self.x == 1 && self.x == 2", 6),
            ("self.x == 1 ? self.a == self.b : false", 107),
            // has() costs nothing beside its operand.
            ("has(self.a)", 1),
            // List literal 10, map literal 30.
            ("[1, 2, 3] == [1]", 21),
            ("{'k': 1}.size() == 1", 32),
        ] {
            assert_eq!(estimate_of(rule), Ok(expected), "{rule}");
        }
    }

    #[test]
    fn string_extension_at_kubernetes_factors() {
        for (rule, expected) in [
            // lowerAscii: ceil(0.1 × 1000) + 2; `==` 'x': 1.
            ("self.a.lowerAscii() == 'x'", 103),
            ("self.a.trim() == 'x'", 103),
            // replace: ceil(0.2 × 1000) + 2; `!=` '' (size 0): 0.
            ("self.a.replace('-', '') != ''", 202),
            // split: ceil(0.2 × 1000) + 2; size 1; `<=` 1.
            ("self.a.split(',').size() <= 10", 204),
            // indexOf on a string: ceil(0.1 × 1000) + 2; `>=` 1.
            ("self.a.indexOf('x') >= 0", 103),
            // startsWith: ceil(0.1 × size of the prefix (3)) + 2.
            ("self.a.startsWith('abc')", 3),
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
            // 100 × 1 + 2; 10 × (1 + ceil(0.1 × 20)) + 2.
            ("self.l.isSorted()", 102),
            ("self.names.isSorted()", 32),
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
        // exists: cond `@not_strictly_false(!@result)` 3.
        assert_eq!(estimate_of("self.l.exists(i, v, v == i)"), Ok(3 + 100 * 7));
        // transformMap: cel-go inserts into a map (1 + @result 1 + i 1 + v 1 a step: about
        // 2 000 for 500 items); the entries are collected as [i, v] pairs instead (1 +
        // @result 1 + [[i, v]] 22 a step) and the map built once: linear still, no copy of
        // the map at each step.
        let c = estimate_of("self.big.transformMap(i, v, v).size() > 0").expect("bounded");
        assert!((10_000..15_000).contains(&c), "{c}");
    }
}
