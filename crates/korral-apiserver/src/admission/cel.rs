//! CEL for admission (webhook `matchConditions`, ValidatingAdmissionPolicy expressions and
//! MutatingAdmissionPolicy mutations): the validation engine's environment and cost model with
//! admission's variables (`object`, `oldObject`, `request`, `params`, `namespaceObject`,
//! `variables`).
//!
//! A mutation builds objects with upstream's object initializers (`Object{spec:
//! Object.spec{replicas: 3}}`, `JSONPatch{op: "add", path: "/x", value: 1}`) and may escape
//! JSON pointer keys with `jsonpatch.escapeKey`. Those are rewritten once, when the
//! expression compiles, into the map literals and string functions they stand for, so the
//! engine and its cost model see ordinary CEL.

use cel::common::ast::{
    CallExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, ListExpr, LiteralValue, MapEntryExpr,
    MapExpr,
};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cel::common::traits::Indexer;
use cel::common::types::{CelString, Type};
use cel::common::value::{CowVal, Val};
use cel::{Context, ExecutionError, Program};
use serde_json::Value;

use super::Request;
use crate::validation::cel::check::Ty;
use crate::validation::cel::compile::{env, parse_in};
use crate::validation::cel::cost::{self, Shape};
use crate::validation::cel::library::authz::{self, AuthorizeFn, Authorizer, RequestResource};
use crate::validation::cel::value::to_cel;
use crate::validation::cel::{PER_CALL_LIMIT, REQUEST_BUDGET};

/// The variables an admission expression may name.
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables",
    authz::VARIABLE,
    authz::REQUEST_RESOURCE,
];

/// Variables whose values are CEL values already: the request's authorizer, a policy's
/// evaluated `variables`.
pub(crate) type Typed = [(&'static str, cel::Value)];

/// `authorizer` and `authorizer.requestResource` for `req`: the server's authorizer asked on
/// behalf of the requesting user, and a check of the resource the request addresses.
pub(crate) fn authorizer(req: &Request<'_>) -> [(&'static str, cel::Value); 2] {
    let mode = req.objects.authorization();
    let storage = req.objects.storage().clone();
    let authorize: AuthorizeFn =
        Arc::new(move |attrs| crate::auth::authorize(mode, storage.as_ref(), attrs));
    let request = RequestResource {
        group: req.info.group.clone(),
        resource: req.info.resource.clone(),
        subresource: req.subresource.unwrap_or("").to_string(),
        namespace: req.namespace.unwrap_or("").to_string(),
        name: req.name.to_string(),
    };
    Authorizer::new(req.user.clone(), authorize).variables(&request)
}

/// Compiled expressions kept (per kind); a cache is emptied when it fills up.
const CACHE_ENTRIES: usize = 1024;

/// Compiled expressions by source. Compiling is a function of the source alone, so the
/// servers of one process share the cache; only successes are kept.
struct Cache<K, T>(LazyLock<Mutex<HashMap<K, Arc<T>>>>);

impl<K: std::hash::Hash + Eq, T> Cache<K, T> {
    const fn new() -> Self {
        Cache(LazyLock::new(|| Mutex::new(HashMap::new())))
    }

    /// The compiled form of `key`, from the cache or from `compile`.
    fn get_or(
        &self,
        key: K,
        compile: impl FnOnce() -> Result<T, String>,
    ) -> Result<Arc<T>, String> {
        if let Some(hit) = self.0.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(hit.clone());
        }
        let compiled = Arc::new(compile()?);
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CACHE_ENTRIES {
            entries.clear();
        }
        entries.insert(key, compiled.clone());
        Ok(compiled)
    }
}

/// Admission expressions (with or without `params`) compiled for evaluation.
static PROGRAMS: Cache<(String, bool), Program> = Cache::new();
/// Mutations compiled for evaluation.
static MUTATIONS: Cache<String, Mutation> = Cache::new();

/// [`compile`] through a cache, for expressions evaluated on every admitted write.
pub(crate) fn compile_cached(source: &str, params: bool) -> Result<Arc<Program>, String> {
    PROGRAMS.get_or((source.to_string(), params), || compile(source, params))
}

/// [`compile_mutation`] through a cache.
pub(crate) fn compile_mutation_cached(source: &str) -> Result<Arc<Mutation>, String> {
    MUTATIONS.get_or(source.to_string(), || compile_mutation(source))
}

/// Compiles an admission expression; `params` allows the `params` variable.
pub(crate) fn compile(source: &str, params: bool) -> Result<Program, String> {
    let program = parse(source)?;
    bounded(program.expression(), params)?;
    Ok(program)
}

/// What an admission expression must evaluate to (upstream's `ReturnTypes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Returns {
    /// A validation or a match condition: `bool`.
    Bool,
    /// A message expression: `string`.
    String,
    /// An audit annotation's value: `string` or `null`.
    StringOrNull,
    /// A variable: anything.
    Any,
}

impl Returns {
    /// The types an expression may have.
    fn types(self) -> &'static [Ty] {
        match self {
            Returns::Bool => &[Ty::Bool],
            Returns::String => &[Ty::Str],
            Returns::StringOrNull => &[Ty::Str, Ty::Null],
            Returns::Any => &[],
        }
    }
}

/// Checks an admission expression as upstream compiles it when a policy or webhook
/// configuration is written: parsed, type-checked against `declared`, of exactly one of the
/// types `returns` allows (a `dyn` result is refused, as cel-go's `IsExactType` refuses it)
/// and bounded by the cost model. The error is upstream's detail: `compilation failed:
/// <cel-go issues>`, or `must evaluate to bool but got dyn`.
pub(crate) fn check(source: &str, declared: &[(&str, Ty)], returns: Returns) -> Result<(), String> {
    check_typed(source, declared, returns).map(drop)
}

/// [`check`], answering the expression's type.
pub(crate) fn check_typed(
    source: &str,
    declared: &[(&str, Ty)],
    returns: Returns,
) -> Result<Ty, String> {
    let program = parse(source).map_err(|e| format!("compilation failed: {e}"))?;
    let ty = crate::validation::cel::check::check(&program, source, declared)
        .map_err(|e| format!("compilation failed: {e}"))?;
    let types = returns.types();
    if !types.is_empty() && !types.contains(&ty) {
        let names: Vec<String> = types.iter().map(Ty::to_string).collect();
        return Err(match names.as_slice() {
            [one] => format!("must evaluate to {one} but got {ty}"),
            _ => format!("must evaluate to one of [{}] but got {ty}", names.join(" ")),
        });
    }
    let probe: Vec<(&str, Shape)> = declared
        .iter()
        .map(|(name, _)| (*name, Shape::opaque(1)))
        .collect();
    cost::estimate(program.expression(), &probe)
        .map_err(|e| format!("compilation failed: ERROR: <input>: {e}"))?;
    Ok(ty)
}

/// Parses `source` as CRD rules are parsed (length, nesting and depth limits, regex and
/// literal checks; see [`parse_in`]).
fn parse(source: &str) -> Result<Program, String> {
    parse_in(env(), source).map_err(|e| e.to_string())
}

/// Checks that the cost model can bound `expr` over admission's variables.
fn bounded(expr: &IdedExpr, params: bool) -> Result<(), String> {
    let mut probe: Vec<(&str, Shape)> = VARIABLES.iter().map(|v| (*v, Shape::opaque(1))).collect();
    if params {
        probe.push(("params", Shape::opaque(1)));
    }
    cost::estimate(expr, &probe).map_err(|e| format!("ERROR: <input>: {e}"))?;
    Ok(())
}

/// A compiled mutation expression: object initializers rewritten to map literals, with the
/// initializers whose type names do not follow their field path (upstream reports those
/// when the mutation runs).
#[derive(Debug, Clone)]
pub(crate) struct Mutation {
    /// The rewritten expression.
    expr: IdedExpr,
    /// Upstream's type-mismatch messages, one per misnamed initializer.
    mismatches: Vec<String>,
}

impl Mutation {
    /// Upstream's `type mismatch` error for misnamed initializers, if any.
    pub(crate) fn mismatch(&self) -> Option<String> {
        (!self.mismatches.is_empty())
            .then(|| format!("type mismatch: {}", self.mismatches.join("\n")))
    }
}

/// Compiles a MutatingAdmissionPolicy mutation (`applyConfiguration` or `jsonPatch`
/// expression), `params` always allowed.
pub(crate) fn compile_mutation(source: &str) -> Result<Mutation, String> {
    let program = parse(source)?;
    let mut mismatches = Vec::new();
    let expr = rewrite(program.expression(), None, &mut mismatches)?;
    bounded(&expr, true)?;
    Ok(Mutation { expr, mismatches })
}

/// The type of an initializer: an `Object` (or one of its fields' types) or a `JSONPatch`.
fn initializer(name: &str) -> bool {
    name == "Object" || name.starts_with("Object.") || name == "JSONPatch"
}

/// Rewrites `expr` for the engine: initializers become map literals (their type names checked
/// against `path`, the type name their position calls for, when known) and
/// `jsonpatch.escapeKey(k)` becomes `k.replace('~', '~0').replace('/', '~1')`.
fn rewrite(
    expr: &IdedExpr,
    path: Option<&str>,
    mismatches: &mut Vec<String>,
) -> Result<IdedExpr, String> {
    let id = expr.id;
    let node = match &expr.expr {
        Expr::Struct(s) => {
            if !initializer(&s.type_name) {
                return Err(format!(
                    "ERROR: <input>: undeclared reference to '{}'",
                    s.type_name
                ));
            }
            if s.type_name != "JSONPatch"
                && let Some(expected) = path.filter(|p| *p != s.type_name)
            {
                mismatches.push(format!(
                    "unexpected type name {:?}, expected {expected:?}, which matches field name path from root Object type",
                    s.type_name
                ));
            }
            let object = s.type_name != "JSONPatch";
            let mut entries = Vec::with_capacity(s.entries.len());
            for entry in &s.entries {
                let EntryExpr::StructField(field) = &entry.expr else {
                    return Err("ERROR: <input>: malformed object initializer".into());
                };
                let child = object.then(|| format!("{}.{}", s.type_name, field.field));
                entries.push(IdedEntryExpr {
                    id: entry.id,
                    expr: EntryExpr::MapEntry(MapEntryExpr {
                        key: IdedExpr {
                            id: field.value.id,
                            expr: Expr::Literal(LiteralValue::String(CelString::from(
                                field.field.clone(),
                            ))),
                        },
                        value: rewrite(&field.value, child.as_deref(), mismatches)?,
                        optional: field.optional,
                    }),
                });
            }
            Expr::Map(MapExpr { entries })
        }
        // Lists and maps of initializers keep the type name of their field.
        Expr::List(l) => Expr::List(ListExpr {
            elements: l
                .elements
                .iter()
                .map(|e| rewrite(e, path, mismatches))
                .collect::<Result<_, _>>()?,
            optional_indices: l.optional_indices.clone(),
        }),
        Expr::Map(m) => {
            let mut entries = Vec::with_capacity(m.entries.len());
            for entry in &m.entries {
                let EntryExpr::MapEntry(e) = &entry.expr else {
                    return Err("ERROR: <input>: malformed map literal".into());
                };
                entries.push(IdedEntryExpr {
                    id: entry.id,
                    expr: EntryExpr::MapEntry(MapEntryExpr {
                        key: rewrite(&e.key, None, mismatches)?,
                        value: rewrite(&e.value, path, mismatches)?,
                        optional: e.optional,
                    }),
                });
            }
            Expr::Map(MapExpr { entries })
        }
        Expr::Call(c) if is_escape_key(c) => {
            let key = rewrite(&c.args[0], None, mismatches)?;
            let replace = |target: IdedExpr, from: &str, to: &str| IdedExpr {
                id,
                expr: Expr::Call(CallExpr {
                    func_name: "replace".into(),
                    target: Some(Box::new(target)),
                    args: [from, to]
                        .into_iter()
                        .map(|s| IdedExpr {
                            id,
                            expr: Expr::Literal(LiteralValue::String(CelString::from(
                                s.to_string(),
                            ))),
                        })
                        .collect(),
                }),
            };
            return Ok(replace(replace(key, "~", "~0"), "/", "~1"));
        }
        Expr::Call(c) => {
            // The branches of a conditional stand where the conditional stands.
            let ternary = c.func_name == cel::common::ast::operators::CONDITIONAL;
            Expr::Call(CallExpr {
                func_name: c.func_name.clone(),
                target: c
                    .target
                    .as_ref()
                    .map(|t| rewrite(t, None, mismatches).map(Box::new))
                    .transpose()?,
                args: c
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| rewrite(a, path.filter(|_| ternary && i > 0), mismatches))
                    .collect::<Result<_, _>>()?,
            })
        }
        Expr::Select(s) => {
            let mut s = s.clone();
            s.operand = Box::new(rewrite(&s.operand, None, mismatches)?);
            Expr::Select(s)
        }
        Expr::Comprehension(c) => {
            let mut c = c.clone();
            c.iter_range = rewrite(&c.iter_range, None, mismatches)?;
            c.accu_init = rewrite(&c.accu_init, None, mismatches)?;
            c.loop_cond = rewrite(&c.loop_cond, None, mismatches)?;
            c.loop_step = rewrite(&c.loop_step, None, mismatches)?;
            c.result = rewrite(&c.result, None, mismatches)?;
            Expr::Comprehension(c)
        }
        other => other.clone(),
    };
    Ok(IdedExpr { id, expr: node })
}

/// Whether a call is `jsonpatch.escapeKey(k)`.
fn is_escape_key(c: &CallExpr) -> bool {
    let on_jsonpatch = matches!(
        c.target.as_deref(),
        Some(IdedExpr { expr: Expr::Ident(name), .. }) if name == "jsonpatch"
    );
    c.args.len() == 1
        && ((c.func_name == "escapeKey" && on_jsonpatch)
            || (c.func_name == "jsonpatch.escapeKey" && c.target.is_none()))
}

/// Evaluates a compiled expression with the given JSON variables (`null` for absent ones) and
/// typed ones, within the per-expression cost limit (webhook match conditions: no policy
/// variables, no budget).
pub(crate) fn evaluate(
    program: &Program,
    vars: &[(&str, &Value)],
    typed: &Typed,
) -> Result<cel::Value, String> {
    let expr = program.expression();
    cost_within_limit(expr, vars, typed, None)?;
    resolve(expr, vars, typed, None)
}

/// The cost budget of one policy evaluation (upstream's `RuntimeCELCostBudget`): the
/// expressions evaluated for one binding and param draw on it, and the first one it cannot
/// pay for stops the evaluation.
#[derive(Debug)]
pub(crate) struct Budget(Cell<u64>);

impl Budget {
    /// A full budget.
    pub(crate) fn new() -> Self {
        Budget(Cell::new(REQUEST_BUDGET))
    }

    /// Spends `cost`, or answers that the budget cannot pay for it.
    fn spend(&self, cost: u64) -> Result<(), OutOfBudget> {
        let left = self.0.get();
        if cost > left {
            return Err(OutOfBudget);
        }
        self.0.set(left - cost);
        Ok(())
    }
}

/// An evaluation stopped because its budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutOfBudget;

/// Upstream's words for an evaluation stopped by its budget.
pub(crate) const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The name `variables` in an expression.
const VARIABLES_NAME: &str = "variables";

/// A policy's `variables` as one evaluation sees them (upstream's composition context): a
/// variable is evaluated only when an expression reads it, once, its value (or error) kept
/// for the later expressions of the evaluation; what evaluating it cost is charged to the
/// budget of the expression that first read it.
///
/// The engine cannot stop a running program, so a program's cost is bounded before it runs,
/// which needs the values of the variables it reads: those it names (`variables.x`,
/// `variables['x']`; all of them when it uses `variables` otherwise) are evaluated first. A
/// variable's error surfaces only where the expression actually reads it, as upstream's
/// `composited variable "x" fails to evaluate: ...`.
pub(crate) struct Composition<'a> {
    /// The policy's variables in order: name and expression.
    declared: Vec<(&'a str, &'a str)>,
    /// The JSON variables (`object`, `request`, ...).
    vars: &'a [(&'a str, &'a Value)],
    /// The typed variables (the authorizer, when the expressions have it).
    typed: &'a Typed,
    /// The variables evaluated so far (`None` while one is being evaluated).
    values: RefCell<HashMap<String, Option<Result<cel::Value, String>>>>,
    /// Cost of the variables evaluated since it was last charged.
    spent: Cell<u64>,
}

impl<'a> Composition<'a> {
    /// The variables `policy` (a policy's `spec`) declares, none evaluated yet.
    pub(crate) fn new(
        policy: &'a Value,
        vars: &'a [(&'a str, &'a Value)],
        typed: &'a Typed,
    ) -> Self {
        let declared = policy
            .get("variables")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|v| {
                let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
                (text("name"), text("expression"))
            })
            .collect();
        Composition {
            declared,
            vars,
            typed,
            values: RefCell::new(HashMap::new()),
            spent: Cell::new(0),
        }
    }

    /// Evaluates `expr` paid from `budget`: first the cost of the variables it made
    /// evaluate, then its own (upstream's order). The inner result is the expression's own
    /// error (a cost past the per-expression limit included).
    pub(crate) fn evaluate(
        &self,
        expr: &IdedExpr,
        budget: &Budget,
    ) -> Result<Result<cel::Value, String>, OutOfBudget> {
        self.prepare(expr);
        budget.spend(self.spent.replace(0))?;
        let evaluated = self.evaluated();
        let cost = match cost_within_limit(expr, self.vars, self.typed, Some(&evaluated)) {
            Ok(cost) => cost,
            Err(e) => return Ok(Err(e)),
        };
        budget.spend(cost)?;
        Ok(resolve(expr, self.vars, self.typed, Some(&evaluated)))
    }

    /// [`Composition::evaluate`] of an expression source compiled through the cache; a
    /// compile error is the expression's error.
    pub(crate) fn evaluate_source(
        &self,
        source: &str,
        budget: &Budget,
    ) -> Result<Result<cel::Value, String>, OutOfBudget> {
        match compile_cached(source, true) {
            Err(e) => Ok(Err(e)),
            Ok(program) => self.evaluate(program.expression(), budget),
        }
    }

    /// [`Composition::evaluate`] of a compiled mutation.
    pub(crate) fn evaluate_mutation(
        &self,
        mutation: &Mutation,
        budget: &Budget,
    ) -> Result<Result<cel::Value, String>, OutOfBudget> {
        self.evaluate(&mutation.expr, budget)
    }

    /// Evaluates the variables `expr` may read, and those they read.
    fn prepare(&self, expr: &IdedExpr) {
        match reads(expr) {
            Reads::Names(names) => {
                for name in names {
                    self.variable(&name);
                }
            }
            Reads::All => {
                for (name, _) in self.declared.clone() {
                    self.variable(name);
                }
            }
        }
    }

    /// Evaluates variable `name` unless it was: its cost is added to what is to be charged
    /// (the per-expression limit at most: cel-go stops there), its value or error kept.
    fn variable(&self, name: &str) {
        if self.values.borrow().contains_key(name) {
            return;
        }
        let Some(&(_, source)) = self.declared.iter().find(|(n, _)| *n == name) else {
            return;
        };
        // Being evaluated: a variable reading itself finds nothing.
        self.values.borrow_mut().insert(name.to_string(), None);
        let result = match compile_cached(source, true) {
            Err(e) => Err(format!(
                "composited variable {name:?} fails to compile: {e}"
            )),
            Ok(program) => {
                let expr = program.expression();
                self.prepare(expr);
                let evaluated = self.evaluated();
                let outcome = match cost_within_limit(expr, self.vars, self.typed, Some(&evaluated))
                {
                    Ok(cost) => {
                        self.charge(cost);
                        resolve(expr, self.vars, self.typed, Some(&evaluated))
                    }
                    Err(e) => {
                        self.charge(PER_CALL_LIMIT);
                        Err(e)
                    }
                };
                outcome.map_err(|e| format!("composited variable {name:?} fails to evaluate: {e}"))
            }
        };
        self.values
            .borrow_mut()
            .insert(name.to_string(), Some(result));
    }

    /// Adds `cost` to what is to be charged.
    fn charge(&self, cost: u64) {
        self.spent.set(self.spent.get().saturating_add(cost));
    }

    /// The variables evaluated so far, as the `variables` value.
    fn evaluated(&self) -> Evaluated {
        let values = self
            .values
            .borrow()
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
            .collect();
        Evaluated(Arc::new(values))
    }
}

/// Which variables an expression may read.
#[derive(Debug, PartialEq, Eq)]
enum Reads {
    /// Those named.
    Names(Vec<String>),
    /// Any (`variables` is used other than by selecting a named field).
    All,
}

/// The variables `expr` names (`variables.x`, `variables['x']`, `has(variables.x)`).
fn reads(expr: &IdedExpr) -> Reads {
    let mut names = Vec::new();
    if collect_reads(expr, &mut names) {
        Reads::Names(names)
    } else {
        Reads::All
    }
}

/// Adds the variables `expr` names to `names`; false when `variables` is used otherwise.
fn collect_reads(expr: &IdedExpr, names: &mut Vec<String>) -> bool {
    let is_variables =
        |e: &IdedExpr| matches!(&e.expr, Expr::Ident(name) if name == VARIABLES_NAME);
    let mut add = |name: &str| {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
        true
    };
    match &expr.expr {
        Expr::Ident(name) => name != VARIABLES_NAME,
        Expr::Select(s) if is_variables(&s.operand) => add(&s.field),
        Expr::Select(s) => collect_reads(&s.operand, names),
        Expr::Call(c)
            if c.func_name == cel::common::ast::operators::INDEX
                && c.args.len() == 2
                && is_variables(&c.args[0]) =>
        {
            match &c.args[1].expr {
                Expr::Literal(LiteralValue::String(key)) => add(key.inner()),
                _ => false,
            }
        }
        Expr::Call(c) => {
            c.target.as_deref().is_none_or(|t| collect_reads(t, names))
                && c.args.iter().all(|a| collect_reads(a, names))
        }
        Expr::List(l) => l.elements.iter().all(|e| collect_reads(e, names)),
        Expr::Map(m) => m.entries.iter().all(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => {
                collect_reads(&e.key, names) && collect_reads(&e.value, names)
            }
            EntryExpr::StructField(f) => collect_reads(&f.value, names),
        }),
        Expr::Struct(s) => s.entries.iter().all(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => {
                collect_reads(&e.key, names) && collect_reads(&e.value, names)
            }
            EntryExpr::StructField(f) => collect_reads(&f.value, names),
        }),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .all(|e| collect_reads(e, names)),
        _ => true,
    }
}

/// The type of the `variables` value (upstream's `kubernetes.variables`).
static VARIABLES_TYPE: Type = Type::new_unspecified_type("kubernetes.variables");

/// The function name marking a variable's error (its message is upstream's whole text).
const VARIABLE_ERROR: &str = "kubernetes.variables";

/// The evaluated variables, as the `variables` value: a field read answers the value, or the
/// variable's error; an unevaluated or unknown one is absent.
#[derive(Debug, Clone)]
struct Evaluated(Arc<HashMap<String, Result<cel::Value, String>>>);

impl Evaluated {
    /// The JSON of the values (errors as `null`), for the cost model.
    fn shape(&self) -> Shape {
        let json: serde_json::Map<String, Value> = self
            .0
            .iter()
            .map(|(k, v)| {
                let value = v.as_ref().map_or(Value::Null, super::policy::to_json);
                (k.clone(), value)
            })
            .collect();
        Shape::of_json(&Value::Object(json))
    }
}

impl Val for Evaluated {
    fn get_type(&self) -> &Type {
        &VARIABLES_TYPE
    }

    fn cel_type() -> &'static Type {
        &VARIABLES_TYPE
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
}

impl Indexer for Evaluated {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let name = idx
            .downcast_ref::<CelString>()
            .map(|s| s.inner().to_string());
        match name.as_deref().and_then(|n| self.0.get(n)) {
            Some(Ok(value)) => Ok(CowVal::Owned(Box::<dyn Val>::try_from(value.clone())?)),
            Some(Err(e)) => Err(ExecutionError::function_error(VARIABLE_ERROR, e)),
            None => Err(ExecutionError::no_such_key(name.as_deref().unwrap_or("?"))),
        }
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// The cost of evaluating `expr` with these variables: the cost model's bound for the values
/// at hand (cel-go counts the steps taken); an error past the per-expression limit.
fn cost_within_limit(
    expr: &IdedExpr,
    vars: &[(&str, &Value)],
    typed: &Typed,
    variables: Option<&Evaluated>,
) -> Result<u64, String> {
    let mut shapes: Vec<(&str, Shape)> =
        vars.iter().map(|(n, v)| (*n, Shape::of_json(v))).collect();
    shapes.extend(
        typed
            .iter()
            .map(|(n, v)| (*n, Shape::of_json(&super::policy::to_json(v)))),
    );
    if let Some(variables) = variables {
        shapes.push((VARIABLES_NAME, variables.shape()));
    }
    let cost = cost::estimate(expr, &shapes).map_err(|e| e.to_string())?;
    if cost > PER_CALL_LIMIT {
        return Err("operation cancelled: actual cost limit exceeded".into());
    }
    Ok(cost)
}

/// Evaluates `expr` with these variables.
fn resolve(
    expr: &IdedExpr,
    vars: &[(&str, &Value)],
    typed: &Typed,
    variables: Option<&Evaluated>,
) -> Result<cel::Value, String> {
    let mut ctx = Context::with_env(env().clone());
    for (name, value) in vars {
        ctx.add_variable_from_value(*name, to_cel(value));
    }
    for (name, value) in typed {
        ctx.add_variable_from_value(*name, value.clone());
    }
    if let Some(variables) = variables {
        ctx.add_variable_as_val(VARIABLES_NAME, Box::new(variables.clone()));
    }
    cel::Value::resolve(expr, &ctx).map_err(|e| match &e {
        ExecutionError::FunctionError { function, message } if function == VARIABLE_ERROR => {
            message.clone()
        }
        _ => crate::validation::cel::library::error_message(&e).unwrap_or_else(|| e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_and_evaluates_admission_variables() {
        let p = compile(
            "object.metadata.name == 'a' && request.operation == 'CREATE'",
            false,
        )
        .expect("test value");
        let obj = serde_json::json!({"metadata": {"name": "a"}});
        let req = serde_json::json!({"operation": "CREATE"});
        let got = evaluate(&p, &[("object", &obj), ("request", &req)], &[]).expect("evaluates");
        assert_eq!(got, cel::Value::Bool(true));
        assert!(compile("params.x", false).is_err());
        assert!(compile("params.x", true).is_ok());
        assert!(compile("object.(", false).is_err());
    }

    /// Admission expressions get the compile-time checks CRD rules get.
    #[test]
    fn literal_errors_fail_to_compile_as_in_crd_rules() {
        let regex = compile("object.metadata.name.matches('[')", false).expect_err("regex");
        assert!(regex.contains("invalid matches argument"), "{regex}");
        let mixed = compile("[1, 'a'].size() > 0", false).expect_err("mixed list");
        assert!(
            mixed.contains("expected type 'int' but found 'string'"),
            "{mixed}"
        );
        let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
        assert!(compile(&deep, false).is_err());
    }

    fn mutate(source: &str, vars: &[(&str, &Value)]) -> Result<Value, String> {
        let m = compile_mutation(source)?;
        if let Some(e) = m.mismatch() {
            return Err(e);
        }
        let policy = Value::Null;
        let scope = Composition::new(&policy, vars, &[]);
        scope
            .evaluate_mutation(&m, &Budget::new())
            .map_err(|_| OUT_OF_BUDGET.to_string())?
            .map(|v| super::super::policy::to_json(&v))
    }

    /// Timestamps, durations and bytes a mutation writes become the JSON strings upstream's
    /// conversion writes (they were debug text).
    #[test]
    fn typed_values_written_by_mutations_are_json_strings() {
        let got = mutate(
            "Object{metadata: Object.metadata{annotations: {\
             'at': string(timestamp('2026-01-02T03:04:05Z')), \
             'ttl': string(duration('1m30.5s'))}}}",
            &[],
        )
        .expect("mutation");
        assert_eq!(got["metadata"]["annotations"]["ttl"], "90.5s");
        let ts = cel::Value::Timestamp(
            chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05.25Z").expect("literal"),
        );
        assert_eq!(
            super::super::policy::to_json(&ts),
            serde_json::json!("2026-01-02T03:04:05.25Z")
        );
        let whole = cel::Value::Timestamp(
            chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05+02:00").expect("literal"),
        );
        assert_eq!(
            super::super::policy::to_json(&whole),
            serde_json::json!("2026-01-02T03:04:05+02:00")
        );
        let d = cel::Value::Duration(chrono::Duration::milliseconds(-1250));
        assert_eq!(
            super::super::policy::to_json(&d),
            serde_json::json!("-1.25s")
        );
        let b = cel::Value::Bytes(std::sync::Arc::new(b"hi".to_vec()));
        assert_eq!(super::super::policy::to_json(&b), serde_json::json!("aGk="));
    }

    #[test]
    fn object_initializers_become_maps() {
        let obj = serde_json::json!({"metadata": {"name": "a"}});
        let got = mutate(
            "Object{metadata: Object.metadata{labels: {'x': object.metadata.name}}, \
             spec: Object.spec{ports: [Object.spec.ports{port: 80}], replicas: 1 + 1}}",
            &[("object", &obj)],
        )
        .expect("evaluates");
        assert_eq!(
            got,
            serde_json::json!({"metadata": {"labels": {"x": "a"}},
                               "spec": {"ports": [{"port": 80}], "replicas": 2}})
        );
        let got = mutate(
            "[JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('a.io/b~c'), \
              value: Object.spec{x: 1}}]",
            &[],
        )
        .expect("evaluates");
        assert_eq!(
            got,
            serde_json::json!([{"op": "add", "path": "/metadata/annotations/a.io~1b~0c",
                                "value": {"x": 1}}])
        );
    }

    #[test]
    fn initializer_names_must_follow_the_field_path() {
        let err = mutate(
            "Object{spec: Object.spec{selector: Object.spec.wrong{}}}",
            &[],
        )
        .expect_err("misnamed");
        assert_eq!(
            err,
            "type mismatch: unexpected type name \"Object.spec.wrong\", expected \"Object.spec.selector\", which matches field name path from root Object type"
        );
        // Lists and conditionals keep their field's type name.
        assert!(mutate("Object{spec: Object.spec{xs: [Object.spec.xs{}]}}", &[]).is_ok());
        assert!(mutate("Object{spec: true ? Object.spec{} : Object.spec{}}", &[]).is_ok());
        assert!(mutate("Object{spec: true ? Object.spec{} : Object.other{}}", &[]).is_err());
        let err = compile_mutation("Widget{}").expect_err("unknown type");
        assert!(err.contains("undeclared reference to 'Widget'"), "{err}");
    }

    /// The variables an expression reads are those it names; any other use reads them all.
    #[test]
    fn variables_read_are_those_named() {
        let reads_of = |source: &str| reads(compile(source, true).expect("compiles").expression());
        assert_eq!(
            reads_of("variables.a == 1 && has(variables.b) && variables['c'] > 0"),
            Reads::Names(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(reads_of("object.x == 1"), Reads::Names(vec![]));
        assert_eq!(reads_of("variables[object.k] == 1"), Reads::All);
        assert_eq!(reads_of("variables.size() > 0"), Reads::All);
    }

    /// A variable is evaluated once per evaluation, its cost charged to the first reader; an
    /// unread one is not evaluated; a failing one fails its readers only.
    #[test]
    fn variables_are_lazy_and_charged_once() {
        let policy = serde_json::json!({"variables": [
            {"name": "items", "expression": "object.items.map(i, i * 2)"},
            {"name": "sum", "expression": "variables.items.size()"},
            {"name": "broken", "expression": "1 / object.zero"},
        ]});
        let obj = serde_json::json!({"items": [1, 2, 3], "zero": 0});
        let vars = [("object", &obj)];
        let scope = Composition::new(&policy, &vars, &[]);
        let budget = Budget::new();
        let run = |source: &str| {
            let program = compile(source, true).expect("compiles");
            scope
                .evaluate(program.expression(), &budget)
                .expect("within budget")
        };
        assert_eq!(run("variables.sum"), Ok(cel::Value::Int(3)));
        let first = REQUEST_BUDGET - budget.0.get();
        assert_eq!(run("variables.sum"), Ok(cel::Value::Int(3)));
        let second = REQUEST_BUDGET - budget.0.get() - first;
        assert!(second < first, "{first} then {second}");
        assert!(!scope.values.borrow().contains_key("broken"));
        let err = run("variables.broken == 1").expect_err("fails");
        assert!(
            err.starts_with("composited variable \"broken\" fails to evaluate: "),
            "{err}"
        );
        // Out of budget through a variable.
        let exhausted = Budget(Cell::new(1));
        let fresh = Composition::new(&policy, &vars, &[]);
        let program = compile("variables.sum > 0", true).expect("compiles");
        assert_eq!(
            fresh.evaluate(program.expression(), &exhausted),
            Err(OutOfBudget)
        );
    }
}
