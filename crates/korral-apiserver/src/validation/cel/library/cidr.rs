//! The CIDR library (`kubernetes.net.cidr`): `cidr(string)`, `isCIDR(string)`,
//! `containsIP(ip|string)`, `containsCIDR(cidr|string)`, `ip()`, `masked()`,
//! `prefixLength()` and `string(cidr)`.

use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::ip::{self, Ip, ip_type};
use super::netip::{self, Prefix};
use super::{error, function, opaque, opaque_arg, opaque_type, string_arg};
use crate::validation::names::go_quote;

/// The CEL type name of a CIDR.
pub const TYPE_NAME: &str = "net.CIDR";

/// A network prefix as a CEL value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr(pub Prefix);

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// The CEL type of a CIDR.
pub fn cidr_type() -> Type {
    opaque_type(TYPE_NAME)
}

/// Parses a prefix as upstream's `parseCIDR`: Go's `ParsePrefix`, not IPv4-mapped.
pub fn parse(raw: &str) -> Result<Prefix, String> {
    let prefix = netip::parse_prefix(raw)
        .map_err(|e| format!("network address parse error during conversion from string: {e}"))?;
    if netip::is_4in6(prefix.addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(prefix)
}

/// `cidr(s)`'s error for `s` (upstream wraps `parseCIDR`'s error once more).
fn conversion(s: &str) -> Result<Prefix, ExecutionError> {
    parse(s).map_err(|e| {
        error(
            "cidr",
            format!("network address parse error during conversion from string: {e}"),
        )
    })
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(cidr_type())?;
    env.add_overload(
        "cidr",
        "string_to_cidr",
        vec![STRING_TYPE],
        function!(|a| Ok(opaque(Cidr(conversion(string_arg(a, 0)?)?)))),
    )?;
    env.add_overload(
        "isCIDR",
        "is_cidr",
        vec![STRING_TYPE],
        function!(|a| Ok(Value::Bool(parse(string_arg(a, 0)?).is_ok()))),
    )?;
    env.add_overload(
        "string",
        "cidr_to_string",
        vec![cidr_type()],
        function!(|a| Ok(Value::String(Arc::new(
            opaque_arg::<Cidr>(a, 0)?.0.render()
        )))),
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        cidr_type(),
        vec![STRING_TYPE],
        function!(|a| {
            let addr = ip::parse(string_arg(a, 1)?).map_err(|e| error("containsIP", e))?;
            Ok(Value::Bool(opaque_arg::<Cidr>(a, 0)?.0.contains(addr)))
        }),
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        cidr_type(),
        vec![ip_type()],
        function!(|a| {
            let addr = opaque_arg::<Ip>(a, 1)?.0;
            Ok(Value::Bool(opaque_arg::<Cidr>(a, 0)?.0.contains(addr)))
        }),
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr_type(),
        vec![STRING_TYPE],
        function!(|a| {
            let other = conversion(string_arg(a, 1)?)
                .map_err(|e| super::error_message(&e).map_or(e, |m| error("containsCIDR", m)))?;
            contains_cidr(&opaque_arg::<Cidr>(a, 0)?.0, &other)
        }),
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        cidr_type(),
        vec![cidr_type()],
        function!(|a| contains_cidr(&opaque_arg::<Cidr>(a, 0)?.0, &opaque_arg::<Cidr>(a, 1)?.0)),
    )?;
    env.add_member_overload(
        "ip",
        "cidr_ip",
        cidr_type(),
        vec![],
        function!(|a| Ok(opaque(Ip(opaque_arg::<Cidr>(a, 0)?.0.addr)))),
    )?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        cidr_type(),
        vec![],
        function!(|a| Ok(Value::Int(i64::from(opaque_arg::<Cidr>(a, 0)?.0.bits)))),
    )?;
    env.add_member_overload(
        "masked",
        "cidr_masked",
        cidr_type(),
        vec![],
        function!(|a| Ok(opaque(Cidr(opaque_arg::<Cidr>(a, 0)?.0.masked())))),
    )?;
    Ok(())
}

/// Whether `outer` holds all of `inner`: they overlap and `inner` is no wider.
fn contains_cidr(outer: &Prefix, inner: &Prefix) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        outer.overlaps(inner) && outer.bits <= inner.bits,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{failure, truth};

    #[test]
    fn upstream_cases() {
        assert_eq!(
            failure("cidr('192.168.0.0/')"),
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0/\"): bad bits after slash: \"\""
        );
        assert_eq!(
            failure("cidr('2001:db8::/')"),
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"2001:db8::/\"): bad bits after slash: \"\""
        );
        for (expr, want) in [
            ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", true),
            (
                "cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
                false,
            ),
            ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", true),
            ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", false),
            (
                "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))",
                true,
            ),
            (
                "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.1/32'))",
                true,
            ),
            (
                "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))",
                false,
            ),
            (
                "cidr('192.168.0.0/24').containsCIDR(cidr('192.169.0.1/32'))",
                false,
            ),
            (
                "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')",
                true,
            ),
            (
                "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')",
                false,
            ),
            ("cidr('192.168.0.0/24').ip() == ip('192.168.0.0')", true),
            (
                "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
                true,
            ),
            ("cidr('192.168.0.0/24').prefixLength() == 24", true),
            ("cidr('2001:db8::/32').containsIP(ip('2001:db8::1'))", true),
            ("cidr('2001:db8::/32').containsIP('2001:dc8::1')", false),
            (
                "cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/33'))",
                true,
            ),
            ("cidr('2001:db8::/32').containsCIDR('2001:db8::/31')", false),
            (
                "cidr('2001:db8:1::/32').masked() == cidr('2001:db8::/32')",
                true,
            ),
            ("cidr('2001:db8::/32').prefixLength() == 32", true),
            ("string(cidr('192.168.0.0/24')) == '192.168.0.0/24'", true),
            ("type(cidr('192.168.0.0/24')) == net.CIDR", true),
            (
                "isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0') && !isCIDR('::ffff:1.2.3.4/120')",
                true,
            ),
            ("cidr('10.0.0.0/8').containsIP('2001:db8::1')", false),
        ] {
            assert_eq!(truth(expr), want, "{expr}");
        }
    }

    #[test]
    fn mapped_addresses_and_bad_arguments() {
        assert_eq!(
            failure("cidr('::ffff:1.2.3.4/120')"),
            "network address parse error during conversion from string: IPv4-mapped IPv6 address \"::ffff:1.2.3.4/120\" is not allowed"
        );
        assert_eq!(
            failure("cidr('10.0.0.0/8').containsIP('10.0.0.300')"),
            "IP Address \"10.0.0.300\" parse error during conversion from string: ParseAddr(\"10.0.0.300\"): IPv4 field has value >255"
        );
    }
}
