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
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cel::common::types::CelString;
use cel::{Context, Program};
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
    Ok(())
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

/// Evaluates a compiled mutation with the given variables.
pub(crate) fn evaluate_mutation(
    mutation: &Mutation,
    vars: &[(&str, &Value)],
    typed: &Typed,
) -> Result<cel::Value, String> {
    cost_within_limit(&mutation.expr, vars, typed)?;
    resolve(&mutation.expr, vars, typed)
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
/// typed ones, within the per-expression cost limit.
pub(crate) fn evaluate(
    program: &Program,
    vars: &[(&str, &Value)],
    typed: &Typed,
) -> Result<cel::Value, String> {
    cost_within_limit(program.expression(), vars, typed)?;
    resolve(program.expression(), vars, typed)
}

/// The cost budget of one policy evaluation (upstream's `RuntimeCELCostBudget`): the
/// expressions evaluated for one binding and param draw on it, and the first one it cannot
/// pay for stops the evaluation.
#[derive(Debug)]
pub(crate) struct Budget(std::cell::Cell<u64>);

impl Budget {
    /// A full budget.
    pub(crate) fn new() -> Self {
        Budget(std::cell::Cell::new(REQUEST_BUDGET))
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

/// [`evaluate`], paid from `budget`.
pub(crate) fn evaluate_within(
    program: &Program,
    vars: &[(&str, &Value)],
    typed: &Typed,
    budget: &Budget,
) -> Result<Result<cel::Value, String>, OutOfBudget> {
    let expr = program.expression();
    let cost = match cost_within_limit(expr, vars, typed) {
        Ok(cost) => cost,
        Err(e) => return Ok(Err(e)),
    };
    budget.spend(cost)?;
    Ok(resolve(expr, vars, typed))
}

/// The cost of evaluating `expr` with these variables: the cost model's bound for the values
/// at hand (cel-go counts the steps taken); an error past the per-expression limit.
fn cost_within_limit(
    expr: &IdedExpr,
    vars: &[(&str, &Value)],
    typed: &Typed,
) -> Result<u64, String> {
    let mut shapes: Vec<(&str, Shape)> =
        vars.iter().map(|(n, v)| (*n, Shape::of_json(v))).collect();
    shapes.extend(
        typed
            .iter()
            .map(|(n, v)| (*n, Shape::of_json(&super::policy::to_json(v)))),
    );
    let cost = cost::estimate(expr, &shapes).map_err(|e| e.to_string())?;
    if cost > PER_CALL_LIMIT {
        return Err("operation cancelled: actual cost limit exceeded".into());
    }
    Ok(cost)
}

/// Evaluates `expr` with these variables.
fn resolve(expr: &IdedExpr, vars: &[(&str, &Value)], typed: &Typed) -> Result<cel::Value, String> {
    let mut ctx = Context::with_env(env().clone());
    for (name, value) in vars {
        ctx.add_variable_from_value(*name, to_cel(value));
    }
    for (name, value) in typed {
        ctx.add_variable_from_value(*name, value.clone());
    }
    cel::Value::resolve(expr, &ctx).map_err(|e| {
        crate::validation::cel::library::error_message(&e).unwrap_or_else(|| e.to_string())
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
        evaluate_mutation(&m, vars, &[]).map(|v| super::super::policy::to_json(&v))
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
}
