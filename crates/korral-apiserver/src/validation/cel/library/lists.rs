//! The lists library (`kubernetes.lists`, version 0 as in v1.36): `isSorted()`, `sum()`,
//! `min()`, `max()`, `indexOf(x)` and `lastIndexOf(x)` on lists.

use std::cmp::Ordering;

use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::{arg, error, function, list_arg};

/// How two elements order, for the comparable types (numbers across kinds, strings, bytes,
/// bools, durations, timestamps).
fn order(name: &str, a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    let found = match (a, b) {
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::List(_) | Value::Map(_) | Value::Null | Value::Opaque(_), _) => None,
        _ => a.partial_cmp(b),
    };
    found.ok_or_else(|| {
        ExecutionError::no_such_overload(
            name,
            vec![a.type_of().to_string(), b.type_of().to_string()],
        )
    })
}

fn comparable(name: &str, v: &Value) -> Result<(), ExecutionError> {
    order(name, v, v).map(|_| ())
}

fn is_sorted(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = list_arg(args, 0)?;
    for pair in list.windows(2) {
        if order("isSorted", &pair[0], &pair[1])? == Ordering::Greater {
            return Ok(Value::Bool(false));
        }
    }
    if let Some(first) = list.first() {
        comparable("isSorted", first)?;
    }
    Ok(Value::Bool(true))
}

fn sum(args: &[Value]) -> Result<Value, ExecutionError> {
    let list = list_arg(args, 0)?;
    let mut acc = match list.first() {
        None => return Ok(Value::Int(0)),
        Some(first @ (Value::Int(_) | Value::UInt(_) | Value::Float(_))) => first.clone(),
        #[allow(unreachable_patterns)]
        Some(other) => {
            return Err(ExecutionError::no_such_overload(
                "sum",
                vec![other.type_of().to_string()],
            ));
        }
    };
    for next in &list[1..] {
        acc = match (&acc, next) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| error("sum", "integer overflow"))?,
            ),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| error("sum", "unsigned integer overflow"))?,
            ),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            (a, b) => {
                return Err(ExecutionError::no_such_overload(
                    "_+_",
                    vec![a.type_of().to_string(), b.type_of().to_string()],
                ));
            }
        };
    }
    Ok(acc)
}

fn extreme(args: &[Value], name: &str, prefer: Ordering) -> Result<Value, ExecutionError> {
    let list = list_arg(args, 0)?;
    let Some(mut best) = list.first() else {
        return Err(error(name, format!("{name} called on empty list")));
    };
    comparable(name, best)?;
    for next in &list[1..] {
        if order(name, best, next)? == prefer {
            best = next;
        }
    }
    Ok(best.clone())
}

fn index_of(args: &[Value]) -> Result<Value, ExecutionError> {
    let (list, item) = (list_arg(args, 0)?, arg(args, 1)?);
    Ok(Value::Int(
        list.iter().position(|v| v == item).map_or(-1, |i| i as i64),
    ))
}

fn last_index_of(args: &[Value]) -> Result<Value, ExecutionError> {
    let (list, item) = (list_arg(args, 0)?, arg(args, 1)?);
    Ok(Value::Int(
        list.iter()
            .rposition(|v| v == item)
            .map_or(-1, |i| i as i64),
    ))
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "isSorted",
        "list_is_sorted",
        LIST_TYPE,
        vec![],
        function!(is_sorted),
    )?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], function!(sum))?;
    env.add_member_overload(
        "min",
        "list_min",
        LIST_TYPE,
        vec![],
        function!(|a| extreme(a, "min", Ordering::Greater)),
    )?;
    env.add_member_overload(
        "max",
        "list_max",
        LIST_TYPE,
        vec![],
        function!(|a| extreme(a, "max", Ordering::Less)),
    )?;
    env.add_member_overload(
        "indexOf",
        "list_a_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        function!(index_of),
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_a_last_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        function!(last_index_of),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{failure, truth};

    #[test]
    fn upstream_examples() {
        for expr in [
            "[1, 2, 3].isSorted() && ![2, 1].isSorted() && [].isSorted()",
            "['a', 'b', 'b'].isSorted() && [1.0, 2.0].isSorted()",
            "[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [].sum() == 0",
            "[3u, 4u].sum() == 7u",
            "[1, 2, 3].min() == 1 && [1, 2, 3].max() == 3",
            "['b', 'a', 'c'].min() == 'a' && ['b', 'a', 'c'].max() == 'c'",
            "[1, 2, 2, 3].indexOf(2) == 1 && [1, 2, 2, 3].lastIndexOf(2) == 2",
            "[1, 2].indexOf(4) == -1 && [1, 2].lastIndexOf(4) == -1",
            "[[1], [2]].indexOf([2]) == 1",
            "'abcabc'.indexOf('c') == 2",
        ] {
            assert!(truth(expr), "{expr}");
        }
        assert_eq!(failure("[].min()"), "min called on empty list");
        assert_eq!(failure("[].max()"), "max called on empty list");
        assert_eq!(
            failure("[9223372036854775807, 1].sum()"),
            "integer overflow"
        );
    }
}
