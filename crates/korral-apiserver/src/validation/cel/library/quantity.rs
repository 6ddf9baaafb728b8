//! The quantity library (`kubernetes.quantity`): `quantity(string)`, `isQuantity(string)`,
//! `sign()`, `isInteger()`, `asInteger()`, `asApproximateFloat()`, `add(quantity|int)`,
//! `sub(quantity|int)`, `isGreaterThan()`, `isLessThan()` and `compareTo()`, over
//! [`crate::quantity::Quantity`] (apimachinery's `resource.Quantity`).
//!
//! `isInteger`/`asInteger` hold for a whole value within int64; upstream also refuses whole
//! values it happens to keep with a fractional scale (`1000m`) or in arbitrary precision.

use std::cmp::Ordering;

use cel::common::types::{INT_TYPE, STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::{error, function, int_arg, opaque, opaque_arg, opaque_type, string_arg};
use crate::quantity::Quantity;

/// The CEL type name of a quantity.
pub const TYPE_NAME: &str = "kubernetes.Quantity";

/// A quantity as a CEL value; equal when their values are.
#[derive(Debug, Clone)]
pub struct QuantityValue(pub Quantity);

impl PartialEq for QuantityValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.cmp(&other.0) == Ordering::Equal
    }
}

impl Eq for QuantityValue {}

impl Opaque for QuantityValue {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// The CEL type of a quantity.
pub fn quantity_type() -> Type {
    opaque_type(TYPE_NAME)
}

/// The CEL value of quantity string `s`, as `quantity(s)` makes it.
pub fn value_of(s: &str) -> Result<Value, String> {
    Quantity::parse(s)
        .map(|q| opaque(QuantityValue(q)))
        .map_err(|e| e.to_string())
}

fn q(args: &[Value], i: usize) -> Result<&Quantity, ExecutionError> {
    Ok(&opaque_arg::<QuantityValue>(args, i)?.0)
}

/// The negation of `q`.
fn negate(q: &Quantity) -> Result<Quantity, ExecutionError> {
    let text = q.canonical();
    let text = text.strip_prefix('+').unwrap_or(&text);
    let negated = match text.strip_prefix('-') {
        Some(positive) => positive.to_string(),
        None => format!("-{text}"),
    };
    Quantity::parse(&negated).map_err(|e| error("sub", e.to_string()))
}

fn integer(n: i64) -> Result<Quantity, ExecutionError> {
    Quantity::parse(&n.to_string()).map_err(|e| error("add", e.to_string()))
}

fn sum(a: &Quantity, b: &Quantity, function: &str) -> Result<Value, ExecutionError> {
    a.checked_add(b)
        .map(|s| opaque(QuantityValue(s)))
        .ok_or_else(|| {
            error(
                function,
                "quantity arithmetic exceeds the supported precision",
            )
        })
}

/// The value as an int64 when it is a whole number within range (upstream's `AsInt64`).
fn as_int64(q: &Quantity) -> Option<i64> {
    if !q.is_integer() {
        return None;
    }
    let (max, min) = (integer(i64::MAX).ok()?, integer(i64::MIN).ok()?);
    if q.cmp(&max) == Ordering::Greater || q.cmp(&min) == Ordering::Less {
        return None;
    }
    // The float is within a few thousand of the value; the exact rest is a small integer.
    let guess = q.canonical_f64() as i64;
    let rest = q.checked_add(&negate(&integer(guess).ok()?).ok()?)?;
    guess.checked_add(rest.canonical_f64() as i64)
}

fn sign(args: &[Value]) -> Result<Value, ExecutionError> {
    let q = q(args, 0)?;
    Ok(Value::Int(if q.is_zero() {
        0
    } else if q.is_negative() {
        -1
    } else {
        1
    }))
}

fn compare(args: &[Value]) -> Result<Ordering, ExecutionError> {
    Ok(q(args, 0)?.cmp(q(args, 1)?))
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let t = quantity_type;
    env.add_type(t())?;
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        function!(|a| value_of(string_arg(a, 0)?).map_err(|e| error("quantity", e))),
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        function!(|a| Ok(Value::Bool(Quantity::parse(string_arg(a, 0)?).is_ok()))),
    )?;
    env.add_overload("sign", "quantity_sign", vec![t()], function!(sign))?;
    env.add_member_overload("sign", "quantity_sign_member", t(), vec![], function!(sign))?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        t(),
        vec![t()],
        function!(|a| Ok(Value::Bool(compare(a)? == Ordering::Greater))),
    )?;
    env.add_member_overload(
        "isLessThan",
        "quantity_is_less_than",
        t(),
        vec![t()],
        function!(|a| Ok(Value::Bool(compare(a)? == Ordering::Less))),
    )?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        t(),
        vec![t()],
        function!(|a| Ok(Value::Int(compare(a)? as i64))),
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        t(),
        vec![],
        function!(|a| Ok(Value::Float(q(a, 0)?.canonical_f64()))),
    )?;
    env.add_member_overload(
        "asInteger",
        "quantity_get_int",
        t(),
        vec![],
        function!(|a| as_int64(q(a, 0)?)
            .map(Value::Int)
            .ok_or_else(|| error("asInteger", "cannot convert value to integer"))),
    )?;
    env.add_member_overload(
        "isInteger",
        "quantity_is_integer",
        t(),
        vec![],
        function!(|a| Ok(Value::Bool(as_int64(q(a, 0)?).is_some()))),
    )?;
    env.add_member_overload(
        "add",
        "quantity_add",
        t(),
        vec![t()],
        function!(|a| sum(q(a, 0)?, q(a, 1)?, "add")),
    )?;
    env.add_member_overload(
        "add",
        "quantity_add_int",
        t(),
        vec![INT_TYPE],
        function!(|a| sum(q(a, 0)?, &integer(int_arg(a, 1)?)?, "add")),
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub",
        t(),
        vec![t()],
        function!(|a| sum(q(a, 0)?, &negate(q(a, 1)?)?, "sub")),
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub_int",
        t(),
        vec![INT_TYPE],
        function!(|a| sum(q(a, 0)?, &negate(&integer(int_arg(a, 1)?)?)?, "sub")),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use cel::Value;

    use super::super::testing::{eval, failure, truth};

    #[test]
    fn upstream_cases() {
        assert!(
            failure("quantity('10Mo')").starts_with("quantities must match the regular expression")
        );
        assert_eq!(
            failure("quantity('10Mm')"),
            "unable to parse quantity's suffix"
        );
        for expr in [
            "isQuantity('20') && isQuantity('20M') && isQuantity('20Mi')",
            "!isQuantity('20Mo') && !isQuantity('10Mm')",
            "quantity('200M') == quantity('200M')",
            "quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')",
            "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')",
            "quantity('200M') != quantity('0.3G')",
            "quantity('50M').isLessThan(quantity('50Mi'))",
            "quantity('50M').isLessThan(quantity('100M'))",
            "!quantity('100M').isLessThan(quantity('50M'))",
            "quantity('50Mi').isGreaterThan(quantity('50M'))",
            "quantity('150Mi').isGreaterThan(quantity('100Mi'))",
            "!quantity('50M').isGreaterThan(quantity('100M'))",
            "quantity('200M').compareTo(quantity('0.2G')) == 0",
            "quantity('50M').compareTo(quantity('50Mi')) == -1",
            "quantity('50Mi').compareTo(quantity('50M')) == 1",
            "quantity('50k').add(quantity('20')) == quantity('50.02k')",
            "quantity('50k').add(20).isLessThan(quantity('50020').add(1))",
            "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
            "quantity('50k').sub(20) == quantity('49980')",
            "quantity('50k').add(20).sub(quantity('100k')).asInteger() == -49980",
            "quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20",
            "quantity('50k').asInteger() == 50000",
            "!quantity('9999999999999999999999999999999999999G').isInteger()",
            "quantity('50').isInteger() && !quantity('1.5').isInteger()",
            "quantity('50.703k').asApproximateFloat() == 50703.0",
            "[quantity('9999999999999999999999999999999999999')].all(x, x.add(quantity('1')).compareTo(x.add(quantity('2'))) == -1)",
            "sign(quantity('-50k')) == -1 && quantity('0').sign() == 0 && quantity('1m').sign() == 1",
            "quantity('9223372036854775807').asInteger() == 9223372036854775807",
            "quantity('-9223372036854775808').asInteger() == -9223372036854775808",
            "quantity('7Ei').asInteger() == 8070450532247928832 && quantity('8Ei').isInteger()",
        ] {
            assert!(truth(expr), "{expr}");
        }
        assert_eq!(
            failure("quantity('9999999999999999999999999999999999999G').asInteger()"),
            "cannot convert value to integer"
        );
        assert_eq!(eval("quantity('1Gi').asInteger()"), Ok(Value::Int(1 << 30)));
    }
}
