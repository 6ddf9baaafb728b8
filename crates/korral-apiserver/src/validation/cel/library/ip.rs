//! The IP library (`kubernetes.net.ip`): `ip(string)`, `isIP(string)`,
//! `ip.isCanonical(string)`, `family()`, `isUnspecified()`, `isLoopback()`,
//! `isLinkLocalMulticast()`, `isLinkLocalUnicast()`, `isGlobalUnicast()` and `string(ip)`.
//! Addresses with a zone and IPv4-mapped IPv6 addresses are refused, as upstream does.

use std::net::IpAddr;
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::netip;
use super::{error, function, opaque, opaque_arg, opaque_type, string_arg};
use crate::validation::names::go_quote;

/// The CEL type name of an IP address.
pub const TYPE_NAME: &str = "net.IP";

/// An IP address as a CEL value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ip(pub IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// The CEL type of an IP address.
pub fn ip_type() -> Type {
    opaque_type(TYPE_NAME)
}

/// Parses an address as upstream's `parseIPAddr`: Go's `ParseAddr`, no zone, not IPv4-mapped.
pub fn parse(raw: &str) -> Result<IpAddr, String> {
    let parsed = netip::parse_addr(raw).map_err(|e| {
        format!(
            "IP Address {} parse error during conversion from string: {e}",
            go_quote(raw)
        )
    })?;
    if !parsed.zone.is_empty() {
        return Err(format!(
            "IP address {} with zone value is not allowed",
            go_quote(raw)
        ));
    }
    if netip::is_4in6(parsed.addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ));
    }
    Ok(parsed.addr)
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(ip_type())?;
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], function!(to_ip))?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], function!(is_ip))?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        function!(is_canonical),
    )?;
    env.add_overload(
        "string",
        "ip_to_string",
        vec![ip_type()],
        function!(to_string),
    )?;
    let id = ip_type;
    env.add_member_overload("family", "ip_family", id(), vec![], function!(family))?;
    env.add_member_overload(
        "isUnspecified",
        "ip_is_unspecified",
        id(),
        vec![],
        function!(|a| class(a, netip::is_unspecified)),
    )?;
    env.add_member_overload(
        "isLoopback",
        "ip_is_loopback",
        id(),
        vec![],
        function!(|a| class(a, netip::is_loopback)),
    )?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        id(),
        vec![],
        function!(|a| class(a, netip::is_link_local_multicast)),
    )?;
    env.add_member_overload(
        "isLinkLocalUnicast",
        "ip_is_link_local_unicast",
        id(),
        vec![],
        function!(|a| class(a, netip::is_link_local_unicast)),
    )?;
    env.add_member_overload(
        "isGlobalUnicast",
        "ip_is_global_unicast",
        id(),
        vec![],
        function!(|a| class(a, netip::is_global_unicast)),
    )?;
    Ok(())
}

fn to_ip(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = string_arg(args, 0)?;
    parse(s).map(|a| opaque(Ip(a))).map_err(|e| error("ip", e))
}

fn is_ip(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(parse(string_arg(args, 0)?).is_ok()))
}

fn is_canonical(args: &[Value]) -> Result<Value, ExecutionError> {
    let s = string_arg(args, 0)?;
    let addr = parse(s).map_err(|e| error("ip.isCanonical", e))?;
    Ok(Value::Bool(addr.to_string() == s))
}

fn to_string(args: &[Value]) -> Result<Value, ExecutionError> {
    let ip = opaque_arg::<Ip>(args, 0)?;
    Ok(Value::String(Arc::new(ip.0.to_string())))
}

fn family(args: &[Value]) -> Result<Value, ExecutionError> {
    let ip = opaque_arg::<Ip>(args, 0)?;
    Ok(Value::Int(if ip.0.is_ipv4() { 4 } else { 6 }))
}

fn class(args: &[Value], test: fn(IpAddr) -> bool) -> Result<Value, ExecutionError> {
    let ip = opaque_arg::<Ip>(args, 0)?;
    Ok(Value::Bool(test(ip.0)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{failure, truth};

    #[test]
    fn upstream_cases() {
        assert!(truth("isIP('192.168.0.1') && !isIP('192.168.0.1.0')"));
        assert_eq!(
            failure("ip('192.168.0.1.0')"),
            "IP Address \"192.168.0.1.0\" parse error during conversion from string: ParseAddr(\"192.168.0.1.0\"): IPv4 address too long"
        );
        assert_eq!(
            failure("ip('2001:db8:::68')"),
            "IP Address \"2001:db8:::68\" parse error during conversion from string: ParseAddr(\"2001:db8:::68\"): each colon-separated field must have at least one digit (at \":68\")"
        );
        assert!(truth(
            "ip.isCanonical('127.0.0.1') && !ip.isCanonical('2001:DB8::68')"
        ));
        assert!(truth(
            "ip('192.168.0.1').family() == 4 && ip('2001:db8::68').family() == 6"
        ));
        assert!(truth(
            "ip('0.0.0.0').isUnspecified() && !ip('127.0.0.1').isUnspecified()"
        ));
        assert!(truth("ip('::').isUnspecified() && ip('::1').isLoopback()"));
        assert!(truth(
            "ip('127.0.0.1').isLoopback() && !ip('1.2.3.4').isLoopback()"
        ));
        assert!(truth(
            "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()"
        ));
        assert!(truth(
            "ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()"
        ));
        assert!(truth(
            "ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast()"
        ));
        assert!(truth(
            "ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()"
        ));
        assert!(truth(
            "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()"
        ));
        assert!(truth(
            "ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()"
        ));
        assert!(truth("string(ip('192.168.0.1')) == '192.168.0.1'"));
        assert!(truth("string(ip('2001:DB8:0:0::68')) == '2001:db8::68'"));
        assert!(truth(
            "ip('127.0.0.1') == ip('127.0.0.1') && ip('127.0.0.1') != ip('127.0.0.2')"
        ));
        assert!(truth("type(ip('192.168.0.1')) == net.IP"));
    }

    #[test]
    fn zones_and_mapped_addresses_are_refused() {
        assert_eq!(
            failure("ip('fe80::1%eth0')"),
            "IP address \"fe80::1%eth0\" with zone value is not allowed"
        );
        assert_eq!(
            failure("ip('::ffff:1.2.3.4')"),
            "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"
        );
        assert!(truth(
            "!isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0') && !isIP('')"
        ));
    }
}
