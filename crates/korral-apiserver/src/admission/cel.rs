//! CEL for admission (webhook `matchConditions`, ValidatingAdmissionPolicy expressions): the
//! validation engine's environment and cost model with admission's variables (`object`,
//! `oldObject`, `request`, `params`, `namespaceObject`, `variables`).

use cel::{Context, Program};
use serde_json::Value;

use crate::validation::cel::PER_CALL_LIMIT;
use crate::validation::cel::compile::{MAX_EXPRESSION_BYTES, env};
use crate::validation::cel::cost::{self, Shape};
use crate::validation::cel::value::to_cel;

/// Stack for the parser thread (the generated parser recurses once per nesting level).
const PARSER_STACK: usize = 64 * 1024 * 1024;

/// The variables an admission expression may name.
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables",
    "authorizer",
];

/// Compiles an admission expression; `params` allows the `params` variable.
pub(crate) fn compile(source: &str, params: bool) -> Result<Program, String> {
    if source.len() > MAX_EXPRESSION_BYTES {
        return Err(format!(
            "expression of {} bytes exceeds the limit of {MAX_EXPRESSION_BYTES} bytes",
            source.len()
        ));
    }
    let owned = source.to_string();
    let program = std::thread::Builder::new()
        .name("cel-admission".into())
        .stack_size(PARSER_STACK)
        .spawn(move || env().compile(&owned).map_err(|e| e.to_string()))
        .map_err(|e| format!("starting the compiler: {e}"))?
        .join()
        .map_err(|_| "the compiler failed".to_string())??;
    let mut probe: Vec<(&str, Shape)> = VARIABLES.iter().map(|v| (*v, Shape::opaque(1))).collect();
    if params {
        probe.push(("params", Shape::opaque(1)));
    }
    cost::estimate(program.expression(), &probe).map_err(|e| format!("ERROR: <input>: {e}"))?;
    Ok(program)
}

/// Evaluates a compiled expression with the given variables (`null` for absent ones).
pub(crate) fn evaluate(program: &Program, vars: &[(&str, &Value)]) -> Result<cel::Value, String> {
    let shapes: Vec<(&str, Shape)> = vars.iter().map(|(n, v)| (*n, Shape::of_json(v))).collect();
    let cost = cost::estimate(program.expression(), &shapes).map_err(|e| e.to_string())?;
    if cost > PER_CALL_LIMIT {
        return Err("operation cancelled: actual cost limit exceeded".into());
    }
    let mut ctx = Context::with_env(env().clone());
    for (name, value) in vars {
        ctx.add_variable_from_value(*name, to_cel(value));
    }
    program.execute(&ctx).map_err(|e| e.to_string())
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
        let got = evaluate(&p, &[("object", &obj), ("request", &req)]).expect("evaluates");
        assert_eq!(got, cel::Value::Bool(true));
        assert!(compile("params.x", false).is_err());
        assert!(compile("params.x", true).is_ok());
        assert!(compile("object.(", false).is_err());
    }
}
