//! CEL device selectors: upstream's `dynamic-resource-allocation/cel` environment, checked when
//! a DeviceClass, ResourceClaim or ResourceClaimTemplate is written.
//!
//! An expression sees one variable, `device`, of type `kubernetes.DRADevice`: `driver`
//! (string), `attributes` (map of domain to map of attribute name to a value of any type),
//! `capacity` (map of domain to map of capacity name to `kubernetes.Quantity`) and
//! `allowMultipleAllocations` (bool). Besides the standard library and the string extensions it
//! has the Kubernetes quantity, semver, regex (`find`, `findAll`) and lists (`isSorted`, `sum`,
//! `min`, `max`, `indexOf`, `lastIndexOf`) libraries, optional values (`.?field`, `[?key]`,
//! `optional.of`/`none`, `hasValue`, `value`, `orValue`, `or`) and `cel.bind`; the other
//! Kubernetes libraries (URLs, IPs and CIDRs, sets, format) are not declared.
//!
//! [`device_selected`] evaluates a selector against one device for the simulated scheduler's
//! allocator, with the standard library, the string extensions and the Kubernetes libraries
//! ([`crate::validation::cel::library`]): capacities are quantities and version attributes
//! semantic versions. At admission a selector is compiled and checked as
//! upstream does: it must parse, every reference must be declared, the
//! types of operators and functions must fit, the result must be `bool` (or of unknown type),
//! and its estimated cost ([`cost`], bounded by what a device can hold) must stay within
//! `CELSelectorExpressionMaxCost`. The type check is a small inference over the parsed tree
//! (the engine itself is dynamically typed): it reports what cel-go's checker reports for the
//! types this environment has, with its messages.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

use cel::Env;
use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::parser::Macro;

use crate::validation::cel::compile::parse_in;
use crate::validation::cel::cost::{self, Shape};

/// `CELSelectorExpressionMaxCost`: the most an expression may be estimated to cost.
pub(super) const MAX_COST: u64 = 1_000_000;
/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`: entries in each map of a device.
const MAX_DEVICE_ENTRIES: u64 = 32;
/// `DeviceMaxDomainLength`.
const MAX_DOMAIN: u64 = 63;
/// `DeviceMaxIDLength`.
const MAX_ID: u64 = 32;
/// `DeviceAttributeMaxValueLength`.
const MAX_ATTRIBUTE_VALUE: u64 = 64;
/// `DriverNameMaxLength`.
const MAX_DRIVER: u64 = 63;

/// What checking a selector found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Compiles, yields a bool, within the cost limit.
    Valid,
    /// Upstream's `Invalid` detail (`compilation failed: ...` or `must evaluate to bool ...`).
    Invalid(String),
    /// Over `CELSelectorExpressionMaxCost`.
    TooComplex,
}

/// The environment: the standard one, the string extensions and `cel.bind`.
fn env() -> &'static Arc<Env> {
    static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
        let mut env = Env::stdlib();
        // A built-in extension and a new macro in a fresh environment cannot clash.
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_macro(Macro::receiver("bind", 3, |helper, target, args| {
            let on_cel =
                matches!(target, Some(IdedExpr { expr: Expr::Ident(n), .. }) if n == "cel");
            if !on_cel || args.len() != 3 {
                return Ok(None);
            }
            let name = match &args[0].expr {
                Expr::Ident(name) => name.clone(),
                _ => {
                    return Err(helper.new_error(
                        args[0].id,
                        "cel.bind() variable names must be simple identifiers",
                    ));
                }
            };
            let body = args.pop().unwrap_or_default();
            let init = args.pop().unwrap_or_default();
            // As cel-go expands it: a fold over nothing whose accumulator is the variable.
            let empty = helper.next_expr(Expr::List(ListExpr::default()));
            let never = helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into())));
            let step = helper.next_expr(Expr::Ident(name.clone()));
            Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(
                ComprehensionExpr {
                    iter_range: empty,
                    iter_var: "#unused".into(),
                    iter_var2: None,
                    accu_var: name,
                    accu_init: init,
                    loop_cond: never,
                    loop_step: step,
                    result: body,
                },
            )))))
        }));
        // The Kubernetes libraries declare overloads of their own: registering cannot clash.
        let _ = crate::validation::cel::library::register(&mut env);
        Arc::new(env)
    });
    &ENV
}

/// The CEL value of a device as the allocator describes it: capacities become quantities
/// and tagged version attributes (`{"version": "1.2.3"}`) semantic versions.
fn device_value(device: &serde_json::Value) -> cel::Value {
    use crate::validation::cel::library::{quantity, semver};
    use crate::validation::cel::value::to_cel;
    use cel::objects::{Key, Map};
    let nested = |field: &str, leaf: &dyn Fn(&serde_json::Value) -> cel::Value| {
        let domains: HashMap<Key, cel::Value> = device[field]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(domain, ids)| {
                let ids: HashMap<Key, cel::Value> = ids
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(id, v)| (Key::String(Arc::new(id.clone())), leaf(v)))
                    .collect();
                (
                    Key::String(Arc::new(domain.clone())),
                    cel::Value::Map(Map { map: Arc::new(ids) }),
                )
            })
            .collect();
        cel::Value::Map(Map {
            map: Arc::new(domains),
        })
    };
    let capacity = |v: &serde_json::Value| match v.as_str() {
        Some(s) => quantity::value_of(s).unwrap_or_else(|_| to_cel(v)),
        None => to_cel(v),
    };
    let attribute = |v: &serde_json::Value| match v.get("version").and_then(|s| s.as_str()) {
        Some(s) => semver::value_of(s).unwrap_or_else(|_| cel::Value::String(Arc::new(s.into()))),
        None => to_cel(v),
    };
    let mut entries: HashMap<Key, cel::Value> = HashMap::new();
    entries.insert(
        Key::String(Arc::new("driver".into())),
        to_cel(&device["driver"]),
    );
    entries.insert(
        Key::String(Arc::new("allowMultipleAllocations".into())),
        to_cel(&device["allowMultipleAllocations"]),
    );
    entries.insert(
        Key::String(Arc::new("attributes".into())),
        nested("attributes", &attribute),
    );
    entries.insert(
        Key::String(Arc::new("capacity".into())),
        nested("capacity", &capacity),
    );
    cel::Value::Map(Map {
        map: Arc::new(entries),
    })
}

/// Verdicts kept (a verdict depends on the expression alone); emptied when full.
const CACHE_ENTRIES: usize = 4096;

/// Checks a selector expression as upstream's `CompileCELExpression` does (remembering the
/// verdicts of recent expressions: a claim can hold hundreds of selectors).
pub(super) fn check(expression: &str) -> Verdict {
    static CACHE: LazyLock<Mutex<HashMap<String, Verdict>>> = LazyLock::new(Mutex::default);
    if let Some(hit) = CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(expression)
    {
        return hit.clone();
    }
    let verdict = check_uncached(expression);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= CACHE_ENTRIES {
        cache.clear();
    }
    cache.insert(expression.to_string(), verdict.clone());
    verdict
}

fn check_uncached(expression: &str) -> Verdict {
    let program = match parse_in(env(), expression) {
        Ok(p) => p,
        // cel-go indents the source snippet with a space.
        Err(e) => {
            return Verdict::Invalid(format!(
                "compilation failed: {}",
                e.0.replace("\n| ", "\n | ")
            ));
        }
    };
    let mut checker = Checker {
        source: expression,
        program: &program,
        scope: vec![("device".into(), Ty::Device)],
        errors: Vec::new(),
    };
    let ty = checker.check(program.expression());
    if !checker.errors.is_empty() {
        return Verdict::Invalid(format!("compilation failed: {}", checker.errors.join("\n")));
    }
    if ty != Ty::Bool && ty != Ty::Dyn {
        return Verdict::Invalid(format!(
            "must evaluate to bool or the unknown type, not {ty}"
        ));
    }
    let vars = [("device", device_shape()), ("optional", Shape::scalar())];
    match cost::estimate_with(program.expression(), &vars, &library_cost) {
        Ok(c) if c > MAX_COST => Verdict::TooComplex,
        Ok(_) => Verdict::Valid,
        Err(e) => Verdict::Invalid(format!("compilation failed: ERROR: <input>: {e}")),
    }
}

/// Whether the selector `expression` selects `device` (the JSON form of a
/// `kubernetes.DRADevice`: `driver`, `attributes` and `capacity` by domain, and
/// `allowMultipleAllocations`), or why it could not be evaluated (upstream's allocator then
/// fails the allocation with that error).
pub(crate) fn device_selected(
    expression: &str,
    device: &serde_json::Value,
) -> Result<bool, String> {
    static PROGRAMS: LazyLock<Mutex<HashMap<String, Arc<cel::Program>>>> =
        LazyLock::new(Mutex::default);
    let cached = PROGRAMS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(expression)
        .cloned();
    let program = match cached {
        Some(p) => p,
        None => {
            let program = Arc::new(
                parse_in(env(), expression).map_err(|e| format!("compilation failed: {}", e.0))?,
            );
            let mut programs = PROGRAMS.lock().unwrap_or_else(|e| e.into_inner());
            if programs.len() >= CACHE_ENTRIES {
                programs.clear();
            }
            programs.insert(expression.to_string(), Arc::clone(&program));
            program
        }
    };
    let mut ctx = cel::Context::with_env(env().clone());
    ctx.add_variable_from_value("device", device_value(device));
    match cel::Value::resolve(program.expression(), &ctx) {
        Ok(cel::Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!(
            "CEL result of type {} could not be converted to bool",
            other.type_of()
        )),
        Err(e) => Err(format!("CEL runtime error: {e}")),
    }
}

/// The largest `device` there can be (upstream's declared sizes).
fn device_shape() -> Shape {
    let map = |len: u64, key: u64, values: Shape| Shape {
        len,
        weight: len.saturating_mul(key + values.weight + 1) + 1,
        fields: BTreeMap::new(),
        items: Some(Arc::new(values)),
    };
    let attributes = map(
        MAX_DEVICE_ENTRIES,
        MAX_DOMAIN,
        map(
            MAX_DEVICE_ENTRIES,
            MAX_ID,
            Shape::opaque(MAX_ATTRIBUTE_VALUE),
        ),
    );
    let capacity = map(
        MAX_DEVICE_ENTRIES,
        MAX_DOMAIN,
        map(
            MAX_DEVICE_ENTRIES,
            MAX_ID,
            Shape::opaque(MAX_ATTRIBUTE_VALUE),
        ),
    );
    let mut fields = BTreeMap::new();
    let weight = attributes.weight + capacity.weight + MAX_DRIVER + 64;
    fields.insert("driver".to_string(), Arc::new(Shape::opaque(MAX_DRIVER)));
    fields.insert("attributes".to_string(), Arc::new(attributes));
    fields.insert("capacity".to_string(), Arc::new(capacity));
    fields.insert(
        "allowMultipleAllocations".to_string(),
        Arc::new(Shape::scalar()),
    );
    Shape {
        len: 4,
        weight,
        fields,
        items: None,
    }
}

/// The quantity and semver libraries' costs: linear in their arguments.
fn library_cost(name: &str, args: &[Shape]) -> Option<(u64, Shape)> {
    let total = args
        .iter()
        .fold(1u64, |acc, s| acc.saturating_add(s.weight));
    let weight = |i: usize| args.get(i).map_or(1, |s| s.weight);
    match name {
        // The regex library: linear in text × pattern, as `matches`.
        "find" => Some((
            total.saturating_add(weight(0).saturating_mul(weight(1))),
            Shape::opaque(weight(0)),
        )),
        "findAll" => {
            let text = weight(0);
            let shape = Shape {
                len: text,
                weight: text.saturating_mul(2),
                fields: BTreeMap::new(),
                items: Some(Arc::new(Shape::opaque(text))),
            };
            Some((total.saturating_add(text.saturating_mul(weight(1))), shape))
        }
        // The lists library walks its list once (sorting compares within it).
        "isSorted" | "sum" | "min" | "max" => {
            let list = args.first().cloned().unwrap_or_default();
            let item = list.items.as_deref().cloned().unwrap_or_else(Shape::scalar);
            Some((total.saturating_mul(2), item))
        }
        // Optional values: no bigger than what they wrap.
        "_?._" | "_[?_]" | "value" | "of" | "ofNonZeroValue" | "orValue" | "or" => {
            let largest = args.iter().map(|a| a.weight).max().unwrap_or(1);
            Some((total, Shape::opaque(largest)))
        }
        "hasValue" | "none" => Some((1, Shape::scalar())),
        "quantity" | "semver" | "add" | "sub" => Some((total, Shape::opaque(MAX_ATTRIBUTE_VALUE))),
        "isQuantity" | "isSemver" | "compareTo" | "isGreaterThan" | "isLessThan" | "sign"
        | "isInteger" | "asInteger" | "asApproximateFloat" | "major" | "minor" | "patch" => {
            Some((total, Shape::scalar()))
        }
        _ => None,
    }
}

/// The types of this environment, as cel-go names them.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Dyn,
    Bool,
    Int,
    Uint,
    Double,
    Str,
    Bytes,
    Null,
    Type,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Quantity,
    Semver,
    Device,
    /// An optional value (cel-go's optional types).
    Optional(Box<Ty>),
    /// The `optional` namespace of `optional.of(..)` and `optional.none()`.
    OptionalNamespace,
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
            Ty::Type => f.write_str("type"),
            Ty::List(t) => write!(f, "list({t})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Quantity => f.write_str("kubernetes.Quantity"),
            Ty::Semver => f.write_str("kubernetes.Semver"),
            Ty::Device => f.write_str("kubernetes.DRADevice"),
            Ty::Optional(t) => write!(f, "optional_type({t})"),
            Ty::OptionalNamespace => f.write_str("optional"),
        }
    }
}

impl Ty {
    fn is_dyn(&self) -> bool {
        *self == Ty::Dyn
    }

    fn numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// Whether values of the two types may meet in `==`: the same type, up to `dyn` parts.
    fn fits(&self, other: &Ty) -> bool {
        match (self, other) {
            (Ty::Dyn, _) | (_, Ty::Dyn) => true,
            (Ty::List(a), Ty::List(b)) => a.fits(b),
            (Ty::Map(ka, va), Ty::Map(kb, vb)) => ka.fits(kb) && va.fits(vb),
            (a, b) => a == b,
        }
    }

    /// The type of both, `dyn` where they differ.
    fn join(&self, other: &Ty) -> Ty {
        match (self, other) {
            (a, b) if a == b => a.clone(),
            (Ty::Dyn, b) => b.clone(),
            (a, Ty::Dyn) => a.clone(),
            (Ty::List(a), Ty::List(b)) => Ty::List(Box::new(a.join(b))),
            _ => Ty::Dyn,
        }
    }
}

/// The names usable as type values (`type(x) == int`).
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

/// The type inference over a parsed selector.
struct Checker<'a> {
    source: &'a str,
    program: &'a cel::Program,
    scope: Vec<(String, Ty)>,
    errors: Vec<String>,
}

impl Checker<'_> {
    /// Records an error at expression `id`, rendered as cel-go renders its issues.
    fn error(&mut self, id: u64, message: &str) -> Ty {
        let offset = self
            .program
            .source_info()
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        let mut line_start = 0usize;
        let mut line = 1usize;
        for (i, c) in self.source.char_indices() {
            if i >= offset {
                break;
            }
            if c == '\n' {
                line += 1;
                line_start = i + 1;
            }
        }
        let snippet = self.source[line_start..]
            .lines()
            .next()
            .unwrap_or("")
            .replace('\t', " ");
        let column = self
            .source
            .get(line_start..offset.max(line_start))
            .map_or(0, |s| s.chars().count());
        self.errors.push(format!(
            "ERROR: <input>:{line}:{}: {message}\n | {snippet}\n | {}^",
            column + 1,
            ".".repeat(column)
        ));
        Ty::Dyn
    }

    fn lookup(&self, name: &str) -> Option<Ty> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    fn check(&mut self, e: &IdedExpr) -> Ty {
        match &e.expr {
            Expr::Literal(lit) => match lit {
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::UInt(_) => Ty::Uint,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::String(_) => Ty::Str,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Null => Ty::Null,
            },
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => t,
                None if TYPE_NAMES.contains(&name.as_str()) => Ty::Type,
                None => self.error(
                    e.id,
                    &format!("undeclared reference to '{name}' (in container '')"),
                ),
            },
            Expr::Select(sel) => {
                let operand = self.check(&sel.operand);
                let field = match operand {
                    Ty::Device => match sel.field.as_str() {
                        "driver" => Ty::Str,
                        "attributes" => Ty::Map(
                            Box::new(Ty::Str),
                            Box::new(Ty::Map(Box::new(Ty::Str), Box::new(Ty::Dyn))),
                        ),
                        "capacity" => Ty::Map(
                            Box::new(Ty::Str),
                            Box::new(Ty::Map(Box::new(Ty::Str), Box::new(Ty::Quantity))),
                        ),
                        "allowMultipleAllocations" => Ty::Bool,
                        other => self.error(e.id, &format!("undefined field '{other}'")),
                    },
                    Ty::Map(_, v) => *v,
                    Ty::Dyn => Ty::Dyn,
                    other => self.error(
                        e.id,
                        &format!("type '{other}' does not support field selection"),
                    ),
                };
                if sel.test { Ty::Bool } else { field }
            }
            Expr::List(list) => {
                let mut elem: Option<Ty> = None;
                for x in &list.elements {
                    let t = self.check(x);
                    elem = Some(match elem {
                        None => t,
                        Some(prev) if prev == t => prev,
                        Some(_) => Ty::Dyn,
                    });
                }
                Ty::List(Box::new(elem.unwrap_or(Ty::Dyn)))
            }
            Expr::Map(map) => {
                let mut key: Option<Ty> = None;
                let mut value: Option<Ty> = None;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let k = self.check(&me.key);
                        let v = self.check(&me.value);
                        key = Some(key.map_or(k.clone(), |p| if p == k { p } else { Ty::Dyn }));
                        value = Some(value.map_or(v.clone(), |p| if p == v { p } else { Ty::Dyn }));
                    }
                }
                Ty::Map(
                    Box::new(key.unwrap_or(Ty::Dyn)),
                    Box::new(value.unwrap_or(Ty::Dyn)),
                )
            }
            Expr::Struct(s) => self.error(
                e.id,
                &format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            ),
            Expr::Unspecified => Ty::Dyn,
            Expr::Comprehension(c) => self.comprehension(e.id, c),
            Expr::Call(call) => {
                let target = call.target.as_ref().map(|t| match &t.expr {
                    Expr::Ident(n) if n == "optional" && self.lookup(n).is_none() => {
                        Ty::OptionalNamespace
                    }
                    _ => self.check(t),
                });
                let args: Vec<Ty> = call.args.iter().map(|a| self.check(a)).collect();
                self.call(e.id, &call.func_name, target, &args)
            }
        }
    }

    fn comprehension(&mut self, id: u64, c: &ComprehensionExpr) -> Ty {
        let range = self.check(&c.iter_range);
        let (first, second) = match &range {
            Ty::List(t) => (Ty::Int, (**t).clone()),
            Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
            Ty::Dyn => (Ty::Dyn, Ty::Dyn),
            other => {
                let message = format!(
                    "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                );
                self.error(id, &message);
                (Ty::Dyn, Ty::Dyn)
            }
        };
        // One variable: a list's items, a map's keys; two: index or key, then the value.
        let iter = match (&range, &c.iter_var2) {
            (Ty::List(t), None) => (**t).clone(),
            _ => first,
        };
        let init = self.check(&c.accu_init);
        let depth = self.scope.len();
        self.scope.push((c.iter_var.clone(), iter));
        if let Some(v2) = &c.iter_var2 {
            self.scope.push((v2.clone(), second));
        }
        self.scope.push((c.accu_var.clone(), init.clone()));
        self.check(&c.loop_cond);
        let step = self.check(&c.loop_step);
        // `map`/`filter` start from an empty list: the steps tell its items.
        let accu = init.join(&step);
        self.scope.truncate(depth);
        self.scope.push((c.accu_var.clone(), accu));
        let result = self.check(&c.result);
        self.scope.truncate(depth);
        result
    }

    fn no_overload(&mut self, id: u64, name: &str, target: Option<&Ty>, args: &[Ty]) -> Ty {
        let listed: Vec<String> = args.iter().map(Ty::to_string).collect();
        let receiver = target.map(|t| format!("{t}.")).unwrap_or_default();
        self.error(
            id,
            &format!(
                "found no matching overload for '{name}' applied to '{receiver}({})'",
                listed.join(", ")
            ),
        )
    }

    fn call(&mut self, id: u64, name: &str, target: Option<Ty>, args: &[Ty]) -> Ty {
        let all = |pred: &dyn Fn(&Ty) -> bool| args.iter().all(|a| a.is_dyn() || pred(a));
        match (name, &target) {
            ("_&&_" | "_||_" | "!_" | "@not_strictly_false", None) => {
                if all(&|a| *a == Ty::Bool) {
                    Ty::Bool
                } else {
                    self.no_overload(id, name, None, args)
                }
            }
            ("_?_:_", None) => {
                if !matches!(args.first(), Some(Ty::Bool | Ty::Dyn)) {
                    return self.no_overload(id, name, None, args);
                }
                let a = args.get(1).cloned().unwrap_or(Ty::Dyn);
                let b = args.get(2).cloned().unwrap_or(Ty::Dyn);
                a.join(&b)
            }
            ("_==_" | "_!=_", None) => match args {
                [a, b] if a.fits(b) || *a == Ty::Null || *b == Ty::Null => Ty::Bool,
                _ => self.no_overload(id, name, None, args),
            },
            ("_<_" | "_<=_" | "_>_" | "_>=_", None) => match args {
                [a, b]
                    if a.is_dyn()
                        || b.is_dyn()
                        || (a.numeric() && b.numeric())
                        || (a == b && matches!(a, Ty::Str | Ty::Bytes | Ty::Bool)) =>
                {
                    Ty::Bool
                }
                _ => self.no_overload(id, name, None, args),
            },
            ("_+_", None) => match args {
                [a, b] if a.is_dyn() => b.clone(),
                [a, b] if b.is_dyn() => a.clone(),
                [Ty::List(a), Ty::List(b)] => Ty::List(Box::new(a.join(b))),
                [a, b]
                    if a == b
                        && matches!(a, Ty::Int | Ty::Uint | Ty::Double | Ty::Str | Ty::Bytes) =>
                {
                    a.clone()
                }
                _ => self.no_overload(id, name, None, args),
            },
            ("_-_" | "_*_" | "_/_" | "_%_", None) => match args {
                [a, b] if a.is_dyn() => b.clone(),
                [a, b] if b.is_dyn() => a.clone(),
                [a, b] if a == b && a.numeric() && !(name == "_%_" && *a == Ty::Double) => {
                    a.clone()
                }
                _ => self.no_overload(id, name, None, args),
            },
            ("-_", None) => match args {
                [a] if a.is_dyn() || matches!(a, Ty::Int | Ty::Double) => a.clone(),
                _ => self.no_overload(id, name, None, args),
            },
            ("_[_]", None) => match args {
                [Ty::List(t), Ty::Int | Ty::Uint | Ty::Dyn] => (**t).clone(),
                [Ty::Map(k, v), key] if key.fits(k) => (**v).clone(),
                [Ty::Dyn, _] => Ty::Dyn,
                _ => self.no_overload(id, name, None, args),
            },
            ("@in", None) => match args {
                [_, Ty::List(_) | Ty::Map(_, _) | Ty::Dyn] => Ty::Bool,
                _ => self.no_overload(id, name, None, args),
            },
            ("size", _) => {
                let subject = target.as_ref().or(args.first());
                match subject {
                    Some(Ty::Str | Ty::Bytes | Ty::List(_) | Ty::Map(_, _) | Ty::Dyn) => Ty::Int,
                    _ => self.no_overload(id, name, target.as_ref(), args),
                }
            }
            ("int", None) => Ty::Int,
            ("uint", None) => Ty::Uint,
            ("double", None) => Ty::Double,
            ("string", None) => Ty::Str,
            ("bytes", None) => Ty::Bytes,
            ("bool", None) => Ty::Bool,
            ("dyn", None) => Ty::Dyn,
            ("type", None) => Ty::Type,
            ("quantity" | "semver", None) | ("isQuantity" | "isSemver", None) => {
                if !all(&|a| *a == Ty::Str) {
                    return self.no_overload(id, name, None, args);
                }
                match name {
                    "quantity" => Ty::Quantity,
                    "semver" => Ty::Semver,
                    _ => Ty::Bool,
                }
            }
            (
                "matches" | "contains" | "startsWith" | "endsWith" | "lowerAscii" | "upperAscii"
                | "trim" | "replace" | "substring" | "charAt" | "split" | "indexOf" | "lastIndexOf",
                Some(Ty::Str | Ty::Dyn),
            )
            | ("matches", None) => match name {
                "matches" | "contains" | "startsWith" | "endsWith" => Ty::Bool,
                "split" => Ty::List(Box::new(Ty::Str)),
                "indexOf" | "lastIndexOf" => Ty::Int,
                _ => Ty::Str,
            },
            ("join", Some(Ty::List(_) | Ty::Dyn)) => Ty::Str,
            ("_?._", None) => match args {
                [Ty::Map(_, v), _] => Ty::Optional(v.clone()),
                [Ty::Device, _] => Ty::Optional(Box::new(Ty::Dyn)),
                [Ty::Dyn, _] => Ty::Optional(Box::new(Ty::Dyn)),
                [other, _] => {
                    let message = format!("type '{other}' does not support field selection");
                    self.error(id, &message)
                }
                _ => self.no_overload(id, name, None, args),
            },
            ("_[?_]", None) => match args {
                [Ty::List(t), Ty::Int | Ty::Uint | Ty::Dyn] => Ty::Optional(t.clone()),
                [Ty::Map(k, v), key] if key.fits(k) => Ty::Optional(v.clone()),
                [Ty::Dyn, _] => Ty::Optional(Box::new(Ty::Dyn)),
                _ => self.no_overload(id, name, None, args),
            },
            ("of" | "ofNonZeroValue", Some(Ty::OptionalNamespace)) if args.len() == 1 => {
                Ty::Optional(Box::new(args[0].clone()))
            }
            ("none", Some(Ty::OptionalNamespace)) if args.is_empty() => {
                Ty::Optional(Box::new(Ty::Dyn))
            }
            ("hasValue", Some(Ty::Optional(_))) => Ty::Bool,
            ("value", Some(Ty::Optional(t))) => (**t).clone(),
            ("orValue", Some(Ty::Optional(t))) => match args {
                [x] if x.fits(t) => t.join(x),
                _ => self.no_overload(id, name, target.as_ref(), args),
            },
            ("or", Some(Ty::Optional(t))) => match args {
                [Ty::Optional(u)] if u.fits(t) => Ty::Optional(Box::new(t.join(u))),
                _ => self.no_overload(id, name, target.as_ref(), args),
            },
            ("find", Some(Ty::Str | Ty::Dyn)) => Ty::Str,
            ("findAll", Some(Ty::Str | Ty::Dyn)) => Ty::List(Box::new(Ty::Str)),
            ("isSorted", Some(Ty::List(_) | Ty::Dyn)) => Ty::Bool,
            ("sum" | "min" | "max", Some(Ty::List(t))) => (**t).clone(),
            ("sum" | "min" | "max", Some(Ty::Dyn)) => Ty::Dyn,
            ("indexOf" | "lastIndexOf", Some(Ty::List(_))) => Ty::Int,
            ("compareTo", Some(Ty::Quantity | Ty::Semver | Ty::Dyn)) => Ty::Int,
            ("isGreaterThan" | "isLessThan", Some(Ty::Quantity | Ty::Semver | Ty::Dyn)) => Ty::Bool,
            ("major" | "minor" | "patch", Some(Ty::Semver | Ty::Dyn)) => Ty::Int,
            ("sign" | "asInteger", Some(Ty::Quantity | Ty::Dyn)) => Ty::Int,
            ("isInteger", Some(Ty::Quantity | Ty::Dyn)) => Ty::Bool,
            ("asApproximateFloat", Some(Ty::Quantity | Ty::Dyn)) => Ty::Double,
            ("add" | "sub", Some(Ty::Quantity | Ty::Dyn)) => Ty::Quantity,
            (
                "matches" | "contains" | "startsWith" | "endsWith" | "lowerAscii" | "upperAscii"
                | "trim" | "replace" | "substring" | "charAt" | "split" | "indexOf" | "lastIndexOf"
                | "join" | "find" | "findAll" | "isSorted" | "sum" | "min" | "max" | "compareTo"
                | "isGreaterThan" | "isLessThan" | "major" | "minor" | "patch" | "sign"
                | "asInteger" | "isInteger" | "asApproximateFloat" | "add" | "sub",
                Some(t),
            ) => {
                let t = t.clone();
                self.no_overload(id, name, Some(&t), args)
            }
            _ => self.error(
                id,
                &format!("undeclared reference to '{name}' (in container '')"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(expression: &str) -> String {
        match check(expression) {
            Verdict::Invalid(detail) => detail,
            other => panic!("{expression}: {other:?}"),
        }
    }

    #[test]
    fn device_selectors_compile() {
        for valid in [
            "device.driver == 'gpu.example.com'",
            "device.attributes['gpu.example.com'].model == 'a100'",
            "device.attributes['gpu.example.com'].count > 2",
            "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0",
            "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('1Gi'))",
            "device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
            "cel.bind(dra, device.attributes['dra.example.com'], dra.a && dra.b)",
            "device.allowMultipleAllocations",
            "'gpu.example.com' in device.attributes",
            "has(device.attributes.x)",
            "device.attributes['d'].exists(k, k.startsWith('x'))",
            "device.attributes['d'].name",
            "device.driver.find('[a-z]+') == 'gpu'",
            "device.driver.findAll('[a-z]+').size() > 1",
            "[1, 2, 3].isSorted() && [1, 2].sum() == 3",
            "device.attributes['gpu.example.com'].?model.orValue('') == 'a100'",
            "device.attributes[?'gpu.example.com'].hasValue()",
            "optional.of(device.driver).value() == 'x' || optional.none().hasValue()",
        ] {
            assert_eq!(check(valid), Verdict::Valid, "{valid}");
        }
    }

    #[test]
    fn compile_errors_as_cel_go_reports_them() {
        assert_eq!(
            invalid("foo == 1"),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^"
        );
        assert!(
            invalid("device.nope")
                .starts_with("compilation failed: ERROR: <input>:1:7: undefined field 'nope'"),
            "{}",
            invalid("device.nope")
        );
        assert!(invalid("device.driver ==").starts_with("compilation failed: ERROR: <input>:1:"));
        assert!(
            invalid("device.driver + 1 == 'a'")
                .contains("found no matching overload for '_+_' applied to '(string, int)'")
        );
        assert!(invalid("frob(device)").contains("undeclared reference to 'frob'"));
        assert_eq!(
            invalid("device.driver"),
            "must evaluate to bool or the unknown type, not string"
        );
        assert_eq!(
            invalid("device.capacity['x'].memory"),
            "must evaluate to bool or the unknown type, not kubernetes.Quantity"
        );
        assert_eq!(
            invalid("device.attributes['x'].?model"),
            "must evaluate to bool or the unknown type, not optional_type(dyn)"
        );
        assert_eq!(
            invalid("device.attributes"),
            "must evaluate to bool or the unknown type, not map(string, map(string, dyn))"
        );
    }

    #[test]
    fn nested_iteration_over_devices_is_too_complex() {
        let cheap = "device.attributes.all(d, device.attributes[d].all(a, a != ''))";
        assert_eq!(check(cheap), Verdict::Valid);
        let costly = "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, \
                      device.attributes.all(d, device.attributes.all(e, a + b + c + d + e != '')))))";
        assert_eq!(check(costly), Verdict::TooComplex);
        // Upstream's own example of a selector over the cost limit.
        let list = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]";
        let upstream = format!(
            "{list}.all(x, {list}.all(y, {list}.all(z, {list}.all(z1, int('1'.find('[0-9]*')) < 100))))"
        );
        assert_eq!(check(&upstream), Verdict::TooComplex);
        let three = format!("{list}.all(x, {list}.all(y, {list}.all(z, int('1') < 100)))");
        assert_eq!(check(&three), Verdict::Valid);
    }
}
