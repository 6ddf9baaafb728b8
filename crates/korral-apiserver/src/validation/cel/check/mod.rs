//! A type checker for CEL expressions, as cel-go's checker runs when kube-apiserver compiles
//! one: every identifier must be declared, fields must exist on the objects they are selected
//! from, operators and functions must have an overload for their arguments' types
//! ([`signatures`]), and the expression's type is inferred (for callers that require `bool`
//! or `string`). Errors read as cel-go prints its issues:
//! `ERROR: <input>:1:5: undefined field 'replica'` followed by the source line and a caret.
//!
//! The engine that evaluates expressions is dynamically typed; this inference runs over the
//! parsed tree only. Where a type is not known (`dyn`: `x-kubernetes-int-or-string`, map
//! values of unknown type, the result of `dyn(...)`), anything goes, as in cel-go.
//! [`schema`] derives the types of `self` and `oldSelf` from a structural schema.

pub mod schema;
pub mod signatures;
pub mod types;

use std::collections::HashMap;

use cel::Program;
use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

pub use self::types::Ty;
use crate::validation::cel::library::comprehensions::PAIRS_TO_MAP;

/// The depth past which the checker gives up on a sub-expression (typing it `dyn`); the
/// parser's limits keep real expressions far below it.
const MAX_DEPTH: usize = 300;

/// The most issues printed (cel-go's default `maxErrorsToReport`).
const MAX_ISSUES: usize = 100;

/// The type inferred for each sub-expression of a checked program, by expression id.
pub type Types = HashMap<u64, Ty>;

/// Checks `program` (parsed from `source`) with the variables `vars` declared; answers its
/// type, or the issues cel-go would report, one `ERROR: ...` block per issue.
pub fn check(program: &Program, source: &str, vars: &[(&str, Ty)]) -> Result<Ty, String> {
    check_typed(program, source, vars).map(|(ty, _)| ty)
}

/// [`check`], answering also the type of every sub-expression (what cel-go's cost estimator
/// reads from the checked program: [`super::cost::estimate_typed`]).
pub fn check_typed(
    program: &Program,
    source: &str,
    vars: &[(&str, Ty)],
) -> Result<(Ty, Types), String> {
    let mut checker = Checker {
        source,
        program,
        scope: vars
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect(),
        errors: Vec::new(),
        depth: 0,
        pairs: 0,
        types: Types::new(),
    };
    let ty = checker.check(program.expression());
    if checker.errors.is_empty() {
        return Ok((ty, checker.types));
    }
    // Printed in source order, at most a hundred, as cel-go's `Errors.ToDisplayString`.
    let mut errors = checker.errors;
    errors.sort_by_key(|(line, column, _)| (*line, *column));
    let total = errors.len();
    let mut shown: Vec<String> = errors
        .into_iter()
        .take(MAX_ISSUES)
        .map(|(_, _, text)| text)
        .collect();
    if total > MAX_ISSUES {
        shown.push(format!("{} more errors were truncated", total - MAX_ISSUES));
    }
    Err(shown.join("\n"))
}

/// One issue at expression `id` of `program` (parsed from `source`), as cel-go prints it:
/// `ERROR: <input>:LINE:COLUMN: message`, the source line, and a caret under the column.
pub fn render_issue(program: &Program, source: &str, id: u64, message: &str) -> String {
    located_issue(program, source, id, message).2
}

/// [`render_issue`] with the issue's line and column (from 1).
fn located_issue(
    program: &Program,
    source: &str,
    id: u64,
    message: &str,
) -> (usize, usize, String) {
    let offset = program
        .source_info()
        .offset_for(id)
        .map_or(0, |(start, _)| start as usize);
    let mut line_start = 0usize;
    let mut line = 1usize;
    for (i, c) in source.char_indices() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    let snippet = source
        .get(line_start..)
        .and_then(|s| s.lines().next())
        .unwrap_or("")
        .replace('\t', " ");
    let column = source
        .get(line_start..offset.max(line_start))
        .map_or(0, |s| s.chars().count())
        + 1;
    let text = format!(
        "ERROR: <input>:{line}:{column}: {message}\n | {snippet}\n | {}^",
        ".".repeat(column - 1)
    );
    (line, column, text)
}

/// Whether the expression's type may be `want` (it is, or it is not known).
pub fn may_be(ty: &Ty, want: &Ty) -> bool {
    ty == want || ty.is_dyn()
}

/// The identifiers that denote types (`type(x) == int`).
pub const TYPE_NAMES: [&str; 10] = [
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

struct Checker<'a> {
    source: &'a str,
    program: &'a Program,
    scope: Vec<(String, Ty)>,
    /// The issues found: line, column, and the issue as printed.
    errors: Vec<(usize, usize, String)>,
    depth: usize,
    /// Inside a `transformMap` expansion (see [`Checker::transform_map_step`]).
    pairs: usize,
    /// The type found for each expression checked.
    types: Types,
}

impl Checker<'_> {
    /// Records an error at expression `id`, rendered as cel-go renders its issues.
    fn error(&mut self, id: u64, message: &str) -> Ty {
        self.errors
            .push(located_issue(self.program, self.source, id, message));
        Ty::Dyn
    }

    fn lookup(&self, name: &str) -> Option<Ty> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    /// The type of the variable named `namespace.field`.
    fn lookup_qualified(&self, namespace: &str, field: &str) -> Option<Ty> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| super::qualified_name_is(n, namespace, field))
            .map(|(_, t)| t.clone())
    }

    fn undeclared(&mut self, id: u64, name: &str) -> Ty {
        self.error(
            id,
            &format!("undeclared reference to '{name}' (in container '')"),
        )
    }

    fn check(&mut self, e: &IdedExpr) -> Ty {
        if self.depth > MAX_DEPTH {
            return Ty::Dyn;
        }
        self.depth += 1;
        let ty = self.check_inner(e);
        self.depth -= 1;
        self.types.insert(e.id, ty.clone());
        ty
    }

    fn check_inner(&mut self, e: &IdedExpr) -> Ty {
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
                None => self.undeclared(e.id, name),
            },
            Expr::Select(sel) => {
                // A variable with a qualified name (`authorizer.requestResource`) wins over
                // a field of its prefix.
                if let Expr::Ident(ns) = &sel.operand.expr
                    && !sel.test
                    && let Some(t) = self.lookup_qualified(ns, &sel.field)
                {
                    return t;
                }
                // A qualified type name (`google.protobuf.Timestamp`, `net.IP`).
                if let Some(root) = types::qualified_type_root(e)
                    && self.lookup(root).is_none()
                {
                    return Ty::Type;
                }
                let operand = self.check(&sel.operand);
                let field = self.select(e.id, &operand, &sel.field);
                if sel.test { Ty::Bool } else { field }
            }
            Expr::List(list) => {
                let mut elem: Option<Ty> = None;
                for (i, x) in list.elements.iter().enumerate() {
                    let mut t = self.check(x);
                    if list.optional_indices.contains(&i)
                        && let Ty::Optional(inner) = t
                    {
                        t = *inner;
                    }
                    elem = Some(self.aggregate(x.id, elem, t));
                }
                Ty::list(elem.unwrap_or(Ty::Dyn))
            }
            Expr::Map(map) => {
                let mut key: Option<Ty> = None;
                let mut value: Option<Ty> = None;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let k = self.check(&me.key);
                        let mut v = self.check(&me.value);
                        if me.optional
                            && let Ty::Optional(inner) = v
                        {
                            v = *inner;
                        }
                        key = Some(self.aggregate(me.key.id, key, k));
                        value = Some(self.aggregate(me.value.id, value, v));
                    }
                }
                Ty::map(key.unwrap_or(Ty::Dyn), value.unwrap_or(Ty::Dyn))
            }
            Expr::Struct(s) => self.undeclared(e.id, &s.type_name),
            Expr::Unspecified => Ty::Dyn,
            Expr::Comprehension(c) => self.comprehension(e.id, c),
            Expr::Call(call) => {
                // A function in a namespace (`sets.contains(a, b)`, `optional.of(x)`).
                if let Some(IdedExpr {
                    expr: Expr::Ident(ns),
                    ..
                }) = call.target.as_deref()
                    && self.lookup(ns).is_none()
                    && signatures::is_qualified_function(ns, &call.func_name)
                {
                    let args: Vec<Ty> = call.args.iter().map(|a| self.check(a)).collect();
                    return self.call(e.id, &format!("{ns}.{}", call.func_name), None, &args);
                }
                if call.func_name == "_?._"
                    && let [operand, field] = call.args.as_slice()
                {
                    let operand = self.check(operand);
                    let name = match &field.expr {
                        Expr::Literal(LiteralValue::String(s)) => s.inner().to_string(),
                        _ => return Ty::optional(Ty::Dyn),
                    };
                    // Selecting from an optional value stays one optional.
                    return match self.select(e.id, &operand, &name) {
                        t @ Ty::Optional(_) if matches!(operand, Ty::Optional(_)) => t,
                        t => Ty::optional(t),
                    };
                }
                if let Some(ty) = self.transform_map_step(call) {
                    return ty;
                }
                let pairs = call.func_name == PAIRS_TO_MAP;
                self.pairs += usize::from(pairs);
                let target = call.target.as_ref().map(|t| self.check(t));
                let args: Vec<Ty> = call.args.iter().map(|a| self.check(a)).collect();
                self.pairs -= usize::from(pairs);
                // `map`/`filter` append to an accumulator that starts as an empty list: the
                // appended items give its type.
                if call.func_name == "_+_"
                    && let Some(IdedExpr {
                        expr: Expr::Ident(accu),
                        ..
                    }) = call.args.first()
                    && accu.starts_with('@')
                    && let [Ty::List(a), Ty::List(b)] = args.as_slice()
                    && a.is_dyn()
                {
                    return Ty::List(b.clone());
                }
                self.call(e.id, &call.func_name, target, &args)
            }
        }
    }

    /// The type of a `transformMap` loop step, `@result + [[key, value]]` (built by its
    /// expansion, never in the source): the pair is typed as the map entry it becomes, so the
    /// map over `map(K, V)` with a body of type `T` is a `map(K, T)`, as cel-go's
    /// `@mapInsert` types it. `None` for any other call.
    fn transform_map_step(&mut self, call: &CallExpr) -> Option<Ty> {
        if self.pairs == 0 || call.func_name != "_+_" {
            return None;
        }
        let [
            accu @ IdedExpr {
                expr: Expr::Ident(name),
                ..
            },
            item,
        ] = call.args.as_slice()
        else {
            return None;
        };
        let Expr::List(item) = &item.expr else {
            return None;
        };
        let [
            IdedExpr {
                expr: Expr::List(pair),
                ..
            },
        ] = item.elements.as_slice()
        else {
            return None;
        };
        let [key, value] = pair.elements.as_slice() else {
            return None;
        };
        if !name.starts_with('@') {
            return None;
        }
        self.check(accu);
        let key = self.check(key);
        let value = self.check(value);
        Some(Ty::list(Ty::map(key, value)))
    }

    /// The type of an aggregate literal's elements so far, given one more of type `next`
    /// (cel-go's homogeneous aggregate literals: differing types are an error). An element
    /// of type `dyn` makes them all `dyn`, as cel-go's `joinTypes` keeps the more general;
    /// `dyn` inside a type may stand for an empty literal's unknown element type, and is
    /// joined with the more precise one.
    fn aggregate(&mut self, id: u64, so_far: Option<Ty>, next: Ty) -> Ty {
        match so_far {
            None => next,
            Some(prev) if prev.is_dyn() || next.is_dyn() => Ty::Dyn,
            Some(prev) if prev.fits(&next) => prev.join(&next),
            Some(prev) => {
                self.error(id, &format!("expected type '{prev}' but found '{next}'"));
                Ty::Dyn
            }
        }
    }

    /// The type of `field` selected from a value of type `operand`.
    fn select(&mut self, id: u64, operand: &Ty, field: &str) -> Ty {
        match operand {
            Ty::Object(o) => match o.fields.get(field) {
                Some(t) => t.clone(),
                None => self.error(id, &format!("undefined field '{field}'")),
            },
            Ty::Map(_, v) => (**v).clone(),
            Ty::Dyn => Ty::Dyn,
            Ty::Optional(inner) => {
                let t = self.select(id, inner, field);
                Ty::optional(t)
            }
            other => self.error(
                id,
                &format!("type '{other}' does not support field selection"),
            ),
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
        let accu = init.join(&step);
        self.scope.truncate(depth);
        self.scope.push((c.accu_var.clone(), accu));
        let result = self.check(&c.result);
        self.scope.truncate(depth);
        result
    }

    fn call(&mut self, id: u64, name: &str, target: Option<Ty>, args: &[Ty]) -> Ty {
        let Some(overloads) = signatures::table().get(name) else {
            return self.undeclared(id, name);
        };
        let member = target.is_some();
        let all: Vec<Ty> = target.iter().chain(args).cloned().collect();
        let mut result: Option<Ty> = None;
        for sig in overloads
            .iter()
            .filter(|s| s.member == member && s.params.len() == all.len())
        {
            let mut bindings = HashMap::new();
            if sig
                .params
                .iter()
                .zip(&all)
                .all(|(p, a)| p.accepts(a, &mut bindings))
            {
                let r = sig.result.substitute(&bindings);
                result = Some(match result {
                    None => r,
                    Some(prev) if prev == r => prev,
                    Some(_) => Ty::Dyn,
                });
            }
        }
        match result {
            Some(r) => r,
            None => {
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
        }
    }
}

#[cfg(test)]
mod tests;
