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
//! Costs count elementary steps: one per node evaluated, plus the length of every string or
//! list an operation walks or copies. Comprehensions (`all`, `exists`, `exists_one`, `map`,
//! `filter`) multiply the cost of their body by the number of iterations, and the accumulator
//! of `map`/`filter` grows by the size of one step per iteration. Functions outside the table
//! below and the Kubernetes libraries' ([`library::cost`]) are refused when the rule is
//! compiled, so no call escapes the bound.

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
            let len = max("maxLength")
                .map(|m| m.saturating_mul(4)) // maxLength counts characters, up to 4 bytes each
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
}

/// Identifiers that name types (usable in `type(x) == int`).
const TYPE_NAMES: [&str; 10] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

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
        Expr::Literal(lit) => Ok(Bound {
            cost: 1,
            shape: match lit {
                LiteralValue::String(s) => Shape::opaque(s.inner().len() as u64),
                LiteralValue::Bytes(b) => Shape::opaque(b.inner().len() as u64),
                _ => Shape::scalar(),
            },
        }),
        Expr::Ident(name) => match scope.lookup(name) {
            Some(shape) => Ok(Bound {
                cost: 1,
                shape: shape.clone(),
            }),
            None if TYPE_NAMES.contains(&name.as_str()) => Ok(Bound {
                cost: 1,
                shape: Shape::scalar(),
            }),
            None => Err(Unbounded::Undeclared(name.clone())),
        },
        Expr::Select(sel) => {
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
            Ok(Bound {
                cost: add(operand.cost, 1),
                shape,
            })
        }
        Expr::List(list) => {
            let mut cost = 1u64;
            let mut weight = 1u64;
            let mut items: Option<Shape> = None;
            for e in &list.elements {
                let b = bound(e, scope)?;
                cost = add(add(cost, b.cost), 1);
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
        Expr::Map(map) => {
            let mut cost = 1u64;
            let mut weight = 1u64;
            let mut fields = BTreeMap::new();
            let mut items: Option<Shape> = None;
            for entry in &map.entries {
                let EntryExpr::MapEntry(e) = &entry.expr else {
                    return Err(Unbounded::Unsupported("message construction".into()));
                };
                let k = bound(&e.key, scope)?;
                let v = bound(&e.value, scope)?;
                cost = add(add(cost, add(k.cost, v.cost)), 1);
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
            let growth = probe(scope, Shape::opaque(0))?.shape.weight;
            const BIG: u64 = 1 << 40;
            let big = probe(scope, Shape::opaque(BIG))?.shape.weight;
            if big > add(BIG, growth) {
                return Err(Unbounded::Unsupported(
                    "comprehension whose accumulator grows faster than its steps".into(),
                ));
            }
            let accu_weight = add(init.shape.weight, mul(n, growth));
            let accu = Shape {
                len: add(init.shape.len, n),
                weight: accu_weight,
                fields: BTreeMap::new(),
                items: None,
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
            let per_iteration = add(add(cond.cost, step.cost), 1);
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
            let mut cost = 1u64;
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
            if let Some(t) = call.target.as_deref().filter(|_| qualified.is_none()) {
                let b = bound(t, scope)?;
                cost = add(cost, b.cost);
                args.push(b.shape);
            }
            for a in &call.args {
                let b = bound(a, scope)?;
                cost = add(cost, b.cost);
                args.push(b.shape);
            }
            let func_name = qualified.as_deref().unwrap_or(&call.func_name);
            let (mut work, shape) = match call_bound(func_name, &args) {
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
                work = work.saturating_sub(args.first().map_or(0, |a| a.weight));
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
    ((bytes as f64) * factor).ceil() as u64
}

/// The cost of scanning `bytes` of a string (cel-go's `StringTraversalCostFactor`, 0.1).
fn traverse(bytes: u64) -> u64 {
    scaled(bytes, 0.1)
}

/// The work of a call given its arguments' shapes (receiver first), and its result's shape.
fn call_bound(name: &str, args: &[Shape]) -> Result<(u64, Shape), Unbounded> {
    let w = |i: usize| args.get(i).map_or(1, |s| s.weight);
    let total: u64 = args.iter().fold(0, |acc, s| add(acc, s.weight));
    let scalar = Shape::scalar;
    Ok(match name {
        // Logic and arithmetic on scalars.
        "_&&_"
        | "_||_"
        | "!_"
        | "-_"
        | "_?_:_"
        | "@not_strictly_false"
        | "_-_"
        | "_*_"
        | "_/_"
        | "_%_" => {
            if name == "_?_:_" {
                let a = args.get(1).cloned().unwrap_or_default();
                let b = args.get(2).cloned().unwrap_or_default();
                (1, join(&a, &b))
            } else {
                (1, scalar())
            }
        }
        // Concatenation copies both sides.
        "_+_" => {
            let a = args.first().cloned().unwrap_or_default();
            let b = args.get(1).cloned().unwrap_or_default();
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
            (add(total, 1), shape)
        }
        // Comparisons walk both values.
        "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => (add(total, 1), scalar()),
        "@in" => (add(total, 1), scalar()),
        "_[_]" => {
            let container = args.first().cloned().unwrap_or_default();
            (add(w(1), 1), container.any_entry_or_field())
        }
        "size" => (1, scalar()),
        "int" | "uint" | "double" | "bool" | "type" => (add(total, 1), scalar()),
        "dyn" => (1, args.first().cloned().unwrap_or_else(scalar)),
        "string" | "bytes" => (add(total, 1), Shape::opaque(add(total, 32))),
        // String scans cost a tenth per byte (cel-go's StringTraversalCostFactor);
        // `contains` compares the text against the substring.
        "contains" => (mul(traverse(w(0)), traverse(w(1))).max(1), scalar()),
        "startsWith" | "endsWith" | "indexOf" | "lastIndexOf" => {
            (add(traverse(total), 1), scalar())
        }
        // The regex engine runs in time linear in text × pattern: text scan × pattern (cel-go: RegexStringLengthCostFactor, a quarter per byte).
        "matches" => (
            mul(traverse(add(w(0), 1)), scaled(w(1), 0.25).max(1)),
            scalar(),
        ),
        "lowerAscii" | "upperAscii" | "trim" | "charAt" | "substring" => {
            (add(traverse(w(0)), 1), Shape::opaque(w(0)))
        }
        "replace" => {
            let out = add(mul(add(w(0), 1), add(w(2), 1)), w(2));
            (add(add(out, total), 1), Shape::opaque(out))
        }
        "split" => {
            let s = w(0);
            let shape = Shape {
                len: add(s, 1),
                weight: add(mul(s, 2), 2),
                fields: BTreeMap::new(),
                items: Some(Arc::new(Shape::opaque(s))),
            };
            (add(mul(add(s, 1), 2), w(1)), shape)
        }
        "join" => {
            let list = args.first().cloned().unwrap_or_default();
            let out = add(list.weight, mul(list.len, w(1)));
            (add(out, 1), Shape::opaque(out))
        }
        other => return Err(Unbounded::Undeclared(other.to_string())),
    })
}

impl Shape {
    fn any_entry_or_field(&self) -> Shape {
        self.any_entry()
    }
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
        assert!(c > 1_000_000_000, "{c}");
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
