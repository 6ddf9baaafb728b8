//! The list functions of cel-go's optional library at version 2 (Kubernetes enables
//! `cel.OptionalTypes()` unversioned since v1.28, so its latest version): `<list>.first()`
//! and `<list>.last()` (an optional of the first or last element, `optional.none()` for an
//! empty list), and `optional.unwrap(<list>)` / `<list>.unwrapOpt()` (the values of the
//! optionals that have one).

use std::sync::Arc;

use cel::common::types::LIST_TYPE;
use cel::objects::OptionalValue;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::{function, list_arg, optional};

fn first(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(optional(list_arg(args, 0)?.first().cloned()))
}

fn last(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(optional(list_arg(args, 0)?.last().cloned()))
}

fn unwrap(args: &[Value]) -> Result<Value, ExecutionError> {
    let mut out = Vec::new();
    for item in list_arg(args, 0)? {
        let found = match item {
            Value::Opaque(o) => o.downcast_ref::<OptionalValue>(),
            _ => None,
        };
        match found {
            Some(opt) => out.extend(opt.value().cloned()),
            None => {
                return Err(ExecutionError::no_such_overload(
                    "optional.unwrap",
                    vec![item.type_of().to_string()],
                ));
            }
        }
    }
    Ok(Value::List(Arc::new(out)))
}

/// Registers the functions on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("first", "list_first", LIST_TYPE, vec![], function!(first))?;
    env.add_member_overload("last", "list_last", LIST_TYPE, vec![], function!(last))?;
    env.add_overload(
        "optional.unwrap",
        "optional_unwrap",
        vec![LIST_TYPE],
        function!(unwrap),
    )?;
    env.add_member_overload(
        "unwrapOpt",
        "optional_unwrapOpt",
        LIST_TYPE,
        vec![],
        function!(unwrap),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::truth;

    #[test]
    fn upstream_examples() {
        for expr in [
            "[1, 2, 3].first().value() == 1 && [1, 2, 3].last().value() == 3",
            "[].first().orValue('test') == 'test' && !([].last().hasValue())",
            "optional.unwrap([optional.of(42), optional.none()]) == [42]",
            "[optional.of(1), optional.none(), optional.of(3)].unwrapOpt() == [1, 3]",
        ] {
            assert!(truth(expr), "{expr}");
        }
    }
}
