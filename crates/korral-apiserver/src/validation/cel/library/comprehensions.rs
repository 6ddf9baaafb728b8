//! `cel.bind` (cel-go's `ext.Bindings`) and two-variable comprehensions (cel-go's
//! `ext.TwoVarComprehensions`, enabled by Kubernetes since v1.32): `all(i, v, p)`, `exists(i, v, p)`, `existsOne(i, v, p)` (and `exists_one`),
//! `transformList(i, v, [filter,] expr)`, `transformMap(k, v, [filter,] expr)` and
//! `transformMapEntry(k, v, [filter,] expr)`. Over a list the first variable is the index
//! and the second the element; over a map, the key and its value.
//!
//! The engine's comprehensions bind one variable, so each macro expands into single-variable
//! ones with the same result: the target is bound once to [`INPUT`], the loop walks its
//! indices or keys ([`KEYS`]) and, wherever the macro's argument expressions are evaluated,
//! the second variable is bound to `INPUT[first]`. The loop steps keep the shapes of the
//! standard macros (`@result && p`, `@result || p`, `@result + [e]`), so the engine folds
//! errors and appends in place as it does for `all`/`exists`/`map`. `transformMap` and
//! `transformMapEntry` collect their entries in a list and build the map once from it
//! ([`PAIRS_TO_MAP`], [`MERGE_MAPS`]), failing on a repeated key as cel-go's `@mapInsert`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, operators,
};
use cel::common::types::DYN_TYPE;
use cel::objects::{Key, Map};
use cel::parser::{Macro, MacroExprHelper};
use cel::{DeclarationError, Env, ExecutionError, ParseError, Value};

use super::{arg, error, function, list_arg};

/// The variable the target is bound to (a name CEL source cannot spell).
pub const INPUT: &str = "@__twoVar_input__";
/// The accumulator, as the standard macros name it.
const ACCU: &str = "@result";
/// The indices of a list, or the keys of a map: what the expanded loops walk.
pub const KEYS: &str = "@twoVarKeys";
/// The name cel-go's map-building function has, under which insertion errors are reported.
pub const MAP_INSERT: &str = "cel.@mapInsert";
/// Builds the map of `transformMap` from the `[key, value]` pairs its loop collected.
pub const PAIRS_TO_MAP: &str = "@twoVarPairsToMap";
/// Builds the map of `transformMapEntry` from the entries (maps) its loop collected.
pub const MERGE_MAPS: &str = "@twoVarMergeMaps";

/// The kinds of two-variable macro.
#[derive(Clone, Copy)]
enum Kind {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

/// Registers the macros and their helper functions on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let macros: [(&str, usize, Kind); 10] = [
        ("all", 3, Kind::All),
        ("exists", 3, Kind::Exists),
        ("existsOne", 3, Kind::ExistsOne),
        ("exists_one", 3, Kind::ExistsOne),
        ("transformList", 3, Kind::TransformList),
        ("transformList", 4, Kind::TransformList),
        ("transformMap", 3, Kind::TransformMap),
        ("transformMap", 4, Kind::TransformMap),
        ("transformMapEntry", 3, Kind::TransformMapEntry),
        ("transformMapEntry", 4, Kind::TransformMapEntry),
    ];
    for (name, arity, kind) in macros {
        env.add_macro(Macro::receiver(name, arity, move |helper, target, args| {
            expand(kind, helper, target, args).map(Some)
        }))?;
    }
    // cel-go's `ext.Bindings`: `cel.bind(name, value, body)`.
    env.add_macro(Macro::receiver("bind", 3, |helper, target, args| {
        let on_cel = matches!(target, Some(IdedExpr { expr: Expr::Ident(n), .. }) if n == "cel");
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
        Ok(Some(bind(helper, &name, init, body)))
    }))?;
    env.add_overload(KEYS, "@twoVarKeys_dyn", vec![DYN_TYPE], function!(keys))?;
    env.add_overload(
        PAIRS_TO_MAP,
        "@twoVarPairsToMap_list",
        vec![DYN_TYPE],
        function!(pairs_to_map),
    )?;
    env.add_overload(
        MERGE_MAPS,
        "@twoVarMergeMaps_list",
        vec![DYN_TYPE],
        function!(merge_maps),
    )?;
    Ok(())
}

/// The variable name of a macro argument, as cel-go's `extractIterVar`.
fn var_name(helper: &MacroExprHelper<'_>, e: &IdedExpr) -> Result<String, ParseError> {
    match &e.expr {
        Expr::Ident(name) => Ok(name.clone()),
        _ => Err(helper.new_error(e.id, "argument must be a simple name")),
    }
}

fn call(helper: &mut MacroExprHelper<'_>, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    helper.next_expr(Expr::Call(CallExpr {
        func_name: name.to_string(),
        target: None,
        args,
    }))
}

fn ident(helper: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    helper.next_expr(Expr::Ident(name.to_string()))
}

fn literal(helper: &mut MacroExprHelper<'_>, v: LiteralValue) -> IdedExpr {
    helper.next_expr(Expr::Literal(v))
}

/// `body` with `var` bound to `value`: the comprehension cel-go's `cel.bind` expands into
/// (an empty range, so only the accumulator, named `var`, and the result are evaluated).
fn bind(helper: &mut MacroExprHelper<'_>, var: &str, value: IdedExpr, body: IdedExpr) -> IdedExpr {
    let range = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let cond = literal(helper, LiteralValue::Boolean(false.into()));
    let step = ident(helper, var);
    helper.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: "#unused".to_string(),
        iter_var2: None,
        accu_var: var.to_string(),
        accu_init: value,
        loop_cond: cond,
        loop_step: step,
        result: body,
    })))
}

/// `body` with the second variable bound to `INPUT[first]`.
fn with_value(
    helper: &mut MacroExprHelper<'_>,
    first: &str,
    second: &str,
    body: IdedExpr,
) -> IdedExpr {
    let input = ident(helper, INPUT);
    let key = ident(helper, first);
    let value = call(helper, operators::INDEX, vec![input, key]);
    bind(helper, second, value, body)
}

/// Expands one two-variable macro call.
fn expand(
    kind: Kind,
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<IdedExpr, ParseError> {
    let Some(target) = target.take() else {
        return Err(helper.new_error(0, "two-variable comprehensions need a target"));
    };
    let mut rest = std::mem::take(args).into_iter();
    let (Some(a0), Some(a1)) = (rest.next(), rest.next()) else {
        return Err(helper.new_error(target.id, "two-variable comprehensions need two variables"));
    };
    let first = var_name(helper, &a0)?;
    let second = var_name(helper, &a1)?;
    if first == second {
        return Err(helper.new_error(a1.id, format!("duplicate variable name: {first}")));
    }
    if first == ACCU || first == "__result__" {
        return Err(helper.new_error(a0.id, "iteration variable overwrites accumulator variable"));
    }
    if second == ACCU || second == "__result__" {
        return Err(helper.new_error(a1.id, "iteration variable overwrites accumulator variable"));
    }
    let mut exprs: Vec<IdedExpr> = rest.collect();
    let (filter, body) = match exprs.len() {
        2 => {
            let body = exprs.pop();
            (exprs.pop(), body)
        }
        _ => (None, exprs.pop()),
    };
    let Some(body) = body else {
        return Err(helper.new_error(target.id, "two-variable comprehensions need an expression"));
    };
    let body = with_value(helper, &first, &second, body);
    let filter = filter.map(|f| with_value(helper, &first, &second, f));
    let accu = |helper: &mut MacroExprHelper<'_>| ident(helper, ACCU);

    let (init, cond, mut step, result) = match kind {
        Kind::All | Kind::Exists => {
            let (init, op) = match kind {
                Kind::All => (true, operators::LOGICAL_AND),
                _ => (false, operators::LOGICAL_OR),
            };
            let init = literal(helper, LiteralValue::Boolean(init.into()));
            let a = accu(helper);
            let cond_arg = match kind {
                Kind::All => a,
                _ => call(helper, operators::LOGICAL_NOT, vec![a]),
            };
            let cond = call(helper, operators::NOT_STRICTLY_FALSE, vec![cond_arg]);
            let a = accu(helper);
            let step = call(helper, op, vec![a, body]);
            (init, cond, step, accu(helper))
        }
        Kind::ExistsOne => {
            let init = literal(helper, LiteralValue::Int(0.into()));
            let cond = literal(helper, LiteralValue::Boolean(true.into()));
            let a = accu(helper);
            let one = literal(helper, LiteralValue::Int(1.into()));
            let plus = call(helper, operators::ADD, vec![a, one]);
            let a = accu(helper);
            let step = call(helper, operators::CONDITIONAL, vec![body, plus, a]);
            let a = accu(helper);
            let one = literal(helper, LiteralValue::Int(1.into()));
            let result = call(helper, operators::EQUALS, vec![a, one]);
            (init, cond, step, result)
        }
        Kind::TransformList => {
            let init = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
            let cond = literal(helper, LiteralValue::Boolean(true.into()));
            let item = helper.next_expr(Expr::List(ListExpr::new(vec![body])));
            let a = accu(helper);
            let step = call(helper, operators::ADD, vec![a, item]);
            (init, cond, step, accu(helper))
        }
        // cel-go inserts into a map accumulator at each step; the entries are collected in a
        // list instead (appended in place), and the map built once from them.
        Kind::TransformMap | Kind::TransformMapEntry => {
            let init = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
            let cond = literal(helper, LiteralValue::Boolean(true.into()));
            let entry = match kind {
                Kind::TransformMap => {
                    let key = ident(helper, &first);
                    helper.next_expr(Expr::List(ListExpr::new(vec![key, body])))
                }
                _ => body,
            };
            let item = helper.next_expr(Expr::List(ListExpr::new(vec![entry])));
            let a = accu(helper);
            let step = call(helper, operators::ADD, vec![a, item]);
            (init, cond, step, accu(helper))
        }
    };
    if let Some(filter) = filter {
        let a = accu(helper);
        step = call(helper, operators::CONDITIONAL, vec![filter, step, a]);
    }
    let input = ident(helper, INPUT);
    let range = call(helper, KEYS, vec![input]);
    let loop_expr = helper.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: first,
        iter_var2: None,
        accu_var: ACCU.to_string(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })));
    let loop_expr = match kind {
        Kind::TransformMap => call(helper, PAIRS_TO_MAP, vec![loop_expr]),
        Kind::TransformMapEntry => call(helper, MERGE_MAPS, vec![loop_expr]),
        _ => loop_expr,
    };
    Ok(bind(helper, INPUT, target, loop_expr))
}

/// The indices of a list or the keys of a map.
fn keys(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::List(Arc::new(match arg(args, 0)? {
        Value::List(l) => (0..l.len() as i64).map(Value::Int).collect(),
        Value::Map(m) => m.map.keys().map(key_value).collect(),
        other => {
            return Err(ExecutionError::no_such_overload(
                "comprehension",
                vec![other.type_of().to_string()],
            ));
        }
    })))
}

fn key_value(k: &Key) -> Value {
    match k {
        Key::Int(i) => Value::Int(*i),
        Key::Uint(u) => Value::UInt(*u),
        Key::Bool(b) => Value::Bool(*b),
        Key::String(s) => Value::String(s.clone()),
    }
}

fn value_key(v: &Value) -> Result<Key, ExecutionError> {
    Ok(match v {
        Value::Int(i) => Key::Int(*i),
        Value::UInt(u) => Key::Uint(*u),
        Value::Bool(b) => Key::Bool(*b),
        Value::String(s) => Key::String(s.clone()),
        other => {
            return Err(ExecutionError::no_such_overload(
                MAP_INSERT,
                vec![other.type_of().to_string()],
            ));
        }
    })
}

/// A map built by inserting entries one after the other: a key already in it fails as
/// cel-go's `InsertMapKeyValue` does.
#[derive(Default)]
struct MapBuilder {
    out: HashMap<Key, Value>,
}

impl MapBuilder {
    fn insert(&mut self, k: &Value, v: &Value) -> Result<(), ExecutionError> {
        let key = value_key(k)?;
        // Numeric keys are equal across int and uint, as map lookups are.
        let twin = match &key {
            Key::Int(i) => u64::try_from(*i).ok().map(Key::Uint),
            Key::Uint(u) => i64::try_from(*u).ok().map(Key::Int),
            _ => None,
        };
        if self.out.contains_key(&key) || twin.is_some_and(|t| self.out.contains_key(&t)) {
            return Err(error(
                MAP_INSERT,
                format!("insert failed: key {} already exists", render_key(k)),
            ));
        }
        self.out.insert(key, v.clone());
        Ok(())
    }

    fn build(self) -> Value {
        Value::Map(Map {
            map: Arc::new(self.out),
        })
    }
}

fn no_overload(v: &Value) -> ExecutionError {
    ExecutionError::no_such_overload(MAP_INSERT, vec![v.type_of().to_string()])
}

/// `transformMap`'s map, from its `[key, value]` pairs.
fn pairs_to_map(args: &[Value]) -> Result<Value, ExecutionError> {
    let mut map = MapBuilder::default();
    for pair in list_arg(args, 0)? {
        match pair {
            Value::List(kv) => match kv.as_slice() {
                [k, v] => map.insert(k, v)?,
                _ => return Err(no_overload(pair)),
            },
            other => return Err(no_overload(other)),
        }
    }
    Ok(map.build())
}

/// `transformMapEntry`'s map, from the entries each step made (each must be a map).
fn merge_maps(args: &[Value]) -> Result<Value, ExecutionError> {
    let mut map = MapBuilder::default();
    for entries in list_arg(args, 0)? {
        match entries {
            Value::Map(m) => {
                for (k, v) in m.map.iter() {
                    map.insert(&key_value(k), v)?;
                }
            }
            other => return Err(no_overload(other)),
        }
    }
    Ok(map.build())
}

/// A key as Go's `%v` prints a CEL value.
fn render_key(k: &Value) -> String {
    match k {
        Value::String(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Bool(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{eval, failure, truth};

    #[test]
    fn quantifiers_over_lists_and_maps() {
        for expr in [
            "[1, 2, 3].all(i, v, v == i + 1)",
            "![1, 2, 3].all(i, v, v == 1)",
            "[1, 2, 3].exists(i, v, i == 2 && v == 3)",
            "![1, 2, 3].exists(i, v, i == v)",
            "[1, 2, 3].existsOne(i, v, v > 2) && [1, 2, 3].exists_one(i, v, i == 0)",
            "![1, 1].existsOne(i, v, v == 1)",
            "{'a': 1, 'b': 2}.all(k, v, k.size() == 1 && v > 0)",
            "{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)",
            "[].all(i, v, false) && ![].exists(i, v, true)",
            // Sorted check without indexing by hand.
            "[1, 2, 5].all(i, v, i == 0 || [1, 2, 5][i - 1] <= v)",
            // Nested: the inner comprehension's variables shadow nothing of the outer's.
            "[[1, 2], [3]].all(i, l, l.all(j, v, v > i))",
            // An error beside a false is absorbed, as cel-go's && does.
            "![1, 0].all(i, v, 2 / v == 3 && false)",
        ] {
            assert!(truth(expr), "{expr}");
        }
    }

    #[test]
    fn transforms() {
        for expr in [
            "[1, 2, 3].transformList(i, v, v * i) == [0, 2, 6]",
            "[1, 2, 3].transformList(i, v, i > 0, v) == [2, 3]",
            "{'a': 1, 'b': 2}.transformList(k, v, k).size() == 2",
            "['x', 'y'].transformMap(i, v, v + string(i)) == {0: 'x0', 1: 'y1'}",
            "{'a': 1, 'b': 2}.transformMap(k, v, v > 1, v * 10) == {'b': 20}",
            "{'a': 1, 'b': 2}.transformMapEntry(k, v, {v: k}) == {1: 'a', 2: 'b'}",
            "['a', 'b'].transformMapEntry(i, v, i == 1, {v: i}) == {'b': 1}",
        ] {
            assert!(truth(expr), "{expr}");
        }
        assert_eq!(
            failure("['a', 'a'].transformMapEntry(i, v, {v: i})"),
            "insert failed: key a already exists"
        );
    }

    #[test]
    fn macro_errors_are_compile_errors() {
        let e = eval("[1].all(i, i, true)").expect_err("duplicate");
        assert!(e.contains("duplicate variable name: i"), "{e}");
        let e = eval("[1].all(i, 1, true)").expect_err("not a name");
        assert!(e.contains("argument must be a simple name"), "{e}");
        let e = eval("[1].transformList(i, @result, true)");
        assert!(e.is_err(), "{e:?}");
    }
}
