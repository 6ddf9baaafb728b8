//! The sets library (cel-go's `ext.Sets`): `sets.contains(list, list)`,
//! `sets.equivalent(list, list)` and `sets.intersects(list, list)`, with CEL equality
//! (`1 == 1.0`).

use cel::common::types::LIST_TYPE;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::{function, list_arg};

/// Whether every element of `b` is in `a`.
fn contains_all(a: &[Value], b: &[Value]) -> bool {
    b.iter().all(|x| a.contains(x))
}

fn pair(args: &[Value]) -> Result<(&[Value], &[Value]), ExecutionError> {
    Ok((list_arg(args, 0)?, list_arg(args, 1)?))
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        vec![LIST_TYPE, LIST_TYPE],
        function!(|a| pair(a).map(|(x, y)| Value::Bool(contains_all(x, y)))),
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        vec![LIST_TYPE, LIST_TYPE],
        function!(|a| pair(a).map(|(x, y)| Value::Bool(contains_all(x, y) && contains_all(y, x)))),
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        vec![LIST_TYPE, LIST_TYPE],
        function!(|a| pair(a).map(|(x, y)| Value::Bool(y.iter().any(|v| x.contains(v))))),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::truth;

    #[test]
    fn cel_go_examples() {
        for expr in [
            "sets.contains([], [])",
            "sets.contains([1, 2, 3, 4], [2, 3])",
            "sets.contains([1, 2, 3], [3, 2, 1])",
            "sets.contains([1.0, 2.0], [1, 2u])",
            "!sets.contains([1, 2], [2, 3])",
            "sets.equivalent([], [])",
            "sets.equivalent([1], [1, 1])",
            "sets.equivalent([1, 2, 3], [3u, 2.0, 1])",
            "!sets.equivalent([1, 2], [2, 2, 2, 3])",
            "sets.intersects([1], [1, 2])",
            "sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])",
            "!sets.intersects([], [])",
            "!sets.intersects([1], [])",
            "!sets.intersects([1], [2])",
        ] {
            assert!(truth(expr), "{expr}");
        }
    }
}
