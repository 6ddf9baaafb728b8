//! The Kubernetes CEL libraries kube-apiserver enables for CRD validation rules and admission
//! policy expressions (`k8s.io/apiserver/pkg/cel/library` and cel-go's `ext.Sets`): IP
//! addresses and CIDRs, URLs, quantities, lists, regular expressions, sets, named formats and
//! semantic versions, and the authorizer of admission requests.
//!
//! Each library registers its overloads on a [`cel::Env`] with [`register`]; values the
//! standard types cannot hold (an IP, a CIDR, a URL, a quantity, a semver, a format) are
//! opaque CEL values. Errors at evaluation carry upstream's messages: [`error_message`]
//! recovers them from the engine's error. [`cost`] bounds every call for the cost model.

pub mod authz;
pub mod cidr;
pub mod comprehensions;
pub mod cost;
pub mod format;
pub mod ip;
pub mod lists;
pub mod netip;
pub mod optionals;
pub mod quantity;
pub mod regex;
pub mod semver;
pub mod sets;
pub mod urlparse;
pub mod urls;

use std::sync::Arc;

use cel::common::types::Type;
use cel::common::value::{CowVal, Val};
use cel::objects::{Opaque, OptionalValue};
use cel::{DeclarationError, Env, ExecutionError, Value};

/// Registers every library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    ip::register(env)?;
    cidr::register(env)?;
    urls::register(env)?;
    quantity::register(env)?;
    lists::register(env)?;
    regex::register(env)?;
    sets::register(env)?;
    format::register(env)?;
    semver::register(env)?;
    authz::register(env)?;
    // cel-go's extensions Kubernetes enables: `ext.Lists` (at version 3 since v1.34, which
    // this crate's extension implements: `slice`, `flatten`, `distinct`, `reverse`, `sort`,
    // `sortBy`, `lists.range`), two-variable comprehensions (v1.32) and the list functions
    // of the optional library.
    env.add_extension(cel::extensions::lists)?;
    comprehensions::register(env)?;
    optionals::register(env)?;
    Ok(())
}

/// A library function over the CEL values of its arguments (receiver first).
pub(crate) type Impl = fn(&[Value]) -> Result<Value, ExecutionError>;

/// Runs `f` over the arguments of an overload and hands its result back to the engine.
pub(crate) fn call<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: Impl,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let values = args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let out = f(&values)?;
    let boxed: Box<dyn Val> = Box::<dyn Val>::try_from(out)?;
    Ok(CowVal::from(boxed as Box<dyn Val + 'v>))
}

/// The engine's overload for a library function `fn(&[Value]) -> Result<Value, _>`.
macro_rules! function {
    ($f:expr) => {{
        fn wrapper<'b, 'v>(
            args: Vec<cel::common::value::CowVal<'b, 'v>>,
        ) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
            let f: $crate::validation::cel::library::Impl = $f;
            $crate::validation::cel::library::call(args, f)
        }
        wrapper as cel::common::functions::Function
    }};
}
pub(crate) use function;

/// The opaque CEL type `name`.
pub(crate) fn opaque_type(name: &'static str) -> Type {
    Type::new_opaque_type(name)
}

/// An evaluation error of library function `function` with upstream's `message`.
pub(crate) fn error(function: &str, message: impl Into<String>) -> ExecutionError {
    ExecutionError::function_error(function, message.into())
}

/// The message of an evaluation error as upstream words it: a library function's error is
/// its message alone; `None` for other errors.
pub fn error_message(e: &ExecutionError) -> Option<String> {
    match e {
        ExecutionError::FunctionError { function, message }
            if cost::FUNCTIONS.contains(&function.as_str())
                || cost::EXT_FUNCTIONS.contains(&function.as_str()) =>
        {
            Some(message.clone())
        }
        _ => None,
    }
}

/// The argument at `i`.
pub(crate) fn arg(args: &[Value], i: usize) -> Result<&Value, ExecutionError> {
    args.get(i)
        .ok_or_else(|| ExecutionError::invalid_argument_count(i + 1, args.len()))
}

/// The string argument at `i`.
pub(crate) fn string_arg(args: &[Value], i: usize) -> Result<&str, ExecutionError> {
    match arg(args, i)? {
        Value::String(s) => Ok(s.as_str()),
        other => Err(other.error_expected_type(cel::objects::ValueType::String)),
    }
}

/// The int argument at `i`.
pub(crate) fn int_arg(args: &[Value], i: usize) -> Result<i64, ExecutionError> {
    match arg(args, i)? {
        Value::Int(n) => Ok(*n),
        other => Err(other.error_expected_type(cel::objects::ValueType::Int)),
    }
}

/// The list argument at `i`.
pub(crate) fn list_arg(args: &[Value], i: usize) -> Result<&[Value], ExecutionError> {
    match arg(args, i)? {
        Value::List(l) => Ok(l.as_slice()),
        other => Err(other.error_expected_type(cel::objects::ValueType::List)),
    }
}

/// The opaque argument at `i`, of library type `T`.
pub(crate) fn opaque_arg<T: Opaque>(args: &[Value], i: usize) -> Result<&T, ExecutionError> {
    let v = arg(args, i)?;
    let found = match v {
        Value::Opaque(o) => o.downcast_ref::<T>(),
        _ => None,
    };
    found.ok_or_else(|| ExecutionError::UnexpectedType {
        got: v.type_of().to_string(),
        want: std::any::type_name::<T>().to_string(),
    })
}

/// An opaque CEL value.
pub(crate) fn opaque<T: Opaque>(v: T) -> Value {
    Value::Opaque(Arc::new(v))
}

/// An optional CEL value: `optional.of(v)` or `optional.none()`.
pub(crate) fn optional(v: Option<Value>) -> Value {
    Value::Opaque(Arc::new(match v {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    }))
}

/// A CEL list of strings.
pub(crate) fn string_list<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::List(Arc::new(
        items
            .into_iter()
            .map(|s| Value::String(Arc::new(s.into())))
            .collect(),
    ))
}

#[cfg(test)]
pub(crate) mod testing {
    //! Evaluating expressions in an environment with the libraries, for their unit tests.

    use std::sync::Arc;

    use cel::{Context, Env, Value};

    /// Evaluates `expr` in the standard environment plus the libraries.
    pub fn eval(expr: &str) -> Result<Value, String> {
        let mut env = Env::stdlib();
        let _ = env.add_extension(cel::extensions::strings);
        super::register(&mut env).map_err(|e| e.to_string())?;
        let program = env.compile(expr).map_err(|e| e.to_string())?;
        let ctx = Context::with_env(Arc::new(env));
        program
            .execute(&ctx)
            .map_err(|e| super::error_message(&e).unwrap_or_else(|| e.to_string()))
    }

    /// Evaluates `expr`, which must yield a bool.
    pub fn truth(expr: &str) -> bool {
        match eval(expr) {
            Ok(Value::Bool(b)) => b,
            other => panic!("{expr}: {other:?}"),
        }
    }

    /// The error evaluating `expr`.
    pub fn failure(expr: &str) -> String {
        match eval(expr) {
            Err(e) => e,
            Ok(v) => panic!("{expr}: expected an error, got {v:?}"),
        }
    }
}
