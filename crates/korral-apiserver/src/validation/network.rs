//! IP addresses, CIDRs and wildcard DNS names, as upstream's `ParseIPSloppy`,
//! `IsValidCIDRForLegacyField`, `IsValidIPv4Address`/`IsValidIPv6Address` and
//! `IsWildcardDNS1123Subdomain` (`k8s.io/apimachinery/pkg/util/validation`), shared by
//! NetworkPolicies, Ingresses, EndpointSlices and the `networking.k8s.io` address kinds.
//!
//! Legacy fields parse "sloppily" as Go's `netutils.ParseIPSloppy`: IPv4 octets may carry
//! leading zeros.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Upstream's message for a bad CIDR in a legacy field.
pub(crate) const CIDR_MESSAGE: &str =
    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// Upstream's messages for a load balancer ingress point's `hostname` (Services and Ingresses):
/// a DNS-1123 subdomain, and not an IP address.
pub(crate) fn load_balancer_hostname(value: &str) -> Vec<String> {
    let mut errs = crate::validation::names::dns1123_subdomain(value);
    if parse_ip_sloppy(value).is_some() {
        errs.push("must be a DNS name, not an IP address".to_string());
    }
    errs
}

/// Upstream's message for a bad IP address in a legacy field.
pub(crate) const IP_MESSAGE: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

const WILDCARD_DNS1123_SUBDOMAIN_FMT: &str =
    "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const WILDCARD_DNS1123_SUBDOMAIN_ERR: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";

/// An IPv4 address in dotted decimal, leading zeros allowed (Go's sloppy parser).
fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse::<u8>().ok()?;
    }
    parts.next().is_none().then_some(Ipv4Addr::from(octets))
}

/// An IP address as Go's `netutils.ParseIPSloppy` reads it.
pub(crate) fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        s.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
    } else {
        parse_ipv4_sloppy(s).map(IpAddr::V4)
    }
}

/// A CIDR (`address/prefix`) as Go's `netutils.ParseCIDRSloppy` reads it: the network address
/// (host bits cleared) and the prefix length.
pub(crate) fn parse_cidr_sloppy(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, prefix) = s.split_once('/')?;
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let prefix: u8 = prefix.parse().ok()?;
    match parse_ip_sloppy(addr)? {
        IpAddr::V4(ip) if prefix <= 32 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            Some((IpAddr::V4(Ipv4Addr::from(u32::from(ip) & mask)), prefix))
        }
        IpAddr::V6(ip) if prefix <= 128 => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            Some((IpAddr::V6(Ipv6Addr::from(u128::from(ip) & mask)), prefix))
        }
        _ => None,
    }
}

/// `IsValidCIDRForLegacyField`'s messages for `value`.
pub(crate) fn cidr(value: &str) -> Vec<String> {
    match parse_cidr_sloppy(value) {
        Some(_) => Vec::new(),
        None => vec![CIDR_MESSAGE.to_string()],
    }
}

/// `IsValidIPv4Address`: `must be a valid IPv4 address` unless `value` is one.
pub(crate) fn ipv4(value: &str) -> Vec<String> {
    match parse_ip_sloppy(value) {
        Some(IpAddr::V4(_)) => Vec::new(),
        _ => vec!["must be a valid IPv4 address".to_string()],
    }
}

/// `IsValidIPv6Address`: `must be a valid IPv6 address` unless `value` is one.
pub(crate) fn ipv6(value: &str) -> Vec<String> {
    match value.parse::<Ipv6Addr>() {
        Ok(_) => Vec::new(),
        Err(_) => vec!["must be a valid IPv6 address".to_string()],
    }
}

/// Upstream's `ValidateNonSpecialIP` (Endpoints, EndpointSlices, external IPs): the messages for
/// an address that does not parse, or that is unspecified, loopback or link-local (an
/// IPv4-mapped IPv6 address counts as its IPv4 address, as in Go).
pub(crate) fn non_special_ip(value: &str) -> Vec<String> {
    let Some(ip) = parse_ip_sloppy(value) else {
        return vec!["must be a valid IP address".to_string()];
    };
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let mut msgs = Vec::new();
    if ip.is_unspecified() {
        msgs.push(format!("may not be unspecified ({value})"));
    }
    if ip.is_loopback() {
        msgs.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_string());
    }
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (
                o[0] == 169 && o[1] == 254,
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (s[0] & 0xffc0 == 0xfe80, s[0] & 0xff0f == 0xff02)
        }
    };
    if link_local {
        msgs.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_string());
    }
    if link_local_multicast {
        msgs.push(
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_string(),
        );
    }
    msgs
}

/// Upstream's `GetWarningsForIP` for an address that parsed: a non-standard form (leading
/// zeros, IPv4-mapped IPv6) or a non-canonical IPv6 form earns a warning naming `path`.
pub(crate) fn ip_warnings(path: &str, value: &str) -> Vec<String> {
    let Some(ip) = parse_ip_sloppy(value) else {
        return Vec::new();
    };
    let strict = value.parse::<IpAddr>().ok();
    let mapped = match strict {
        Some(IpAddr::V6(v6)) => v6.to_ipv4_mapped(),
        _ => None,
    };
    if strict.is_none() || mapped.is_some() {
        let preferred = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        return vec![format!(
            "{path}: non-standard IP address {value:?} will be considered invalid in a future Kubernetes release: use \"{preferred}\""
        )];
    }
    match strict {
        Some(IpAddr::V6(v6)) if v6.to_string() != value => vec![format!(
            "{path}: IPv6 address {value:?} should be in RFC 5952 canonical format (\"{v6}\")"
        )],
        _ => Vec::new(),
    }
}

/// Whether the CIDR `inner` is a strict subset of the CIDR `outer` (both already parsed):
/// same family, longer prefix, and its network address inside `outer`.
pub(crate) fn strict_subset(outer: (IpAddr, u8), inner: (IpAddr, u8)) -> bool {
    if inner.1 <= outer.1 {
        return false;
    }
    match (outer.0, inner.0) {
        (IpAddr::V4(o), IpAddr::V4(i)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(outer.1)).unwrap_or(0);
            u32::from(i) & mask == u32::from(o)
        }
        (IpAddr::V6(o), IpAddr::V6(i)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(outer.1)).unwrap_or(0);
            u128::from(i) & mask == u128::from(o)
        }
        _ => false,
    }
}

/// Upstream `IsWildcardDNS1123Subdomain`: `*.` followed by a DNS-1123 subdomain, at most 253
/// characters.
pub(crate) fn wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let valid = value
        .strip_prefix("*.")
        .is_some_and(|rest| crate::validation::names::dns1123_subdomain(rest).is_empty());
    if !valid {
        errs.push(format!(
            "{WILDCARD_DNS1123_SUBDOMAIN_ERR} (e.g. '*.example.com', regex used for validation is '{WILDCARD_DNS1123_SUBDOMAIN_FMT}')"
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_addresses_parse_sloppily() {
        assert!(parse_ip_sloppy("010.001.0.1").is_some());
        assert!(parse_ip_sloppy("10.0.0.300").is_none());
        assert!(parse_ip_sloppy("2001:db8::1").is_some());
        assert!(cidr("10.0.0.0/8").is_empty());
        assert!(cidr("10.0.0.1/8").is_empty());
        assert_eq!(cidr("10.0.0.300/8"), vec![CIDR_MESSAGE.to_string()]);
        assert_eq!(cidr("10.0.0.0/33"), vec![CIDR_MESSAGE.to_string()]);
        assert_eq!(cidr("10.0.0.0"), vec![CIDR_MESSAGE.to_string()]);
        assert!(cidr("2001:db8::/64").is_empty());
        assert!(ipv4("10.1.0.5").is_empty());
        assert!(!ipv4("2001:db8::1").is_empty());
        assert!(ipv6("2001:db8::1").is_empty());
        assert!(!ipv6("10.1.0.5").is_empty());
    }

    #[test]
    fn special_addresses_are_named() {
        assert!(non_special_ip("10.0.0.1").is_empty());
        assert_eq!(
            non_special_ip("x"),
            vec!["must be a valid IP address".to_string()]
        );
        assert_eq!(
            non_special_ip("0.0.0.0"),
            vec!["may not be unspecified (0.0.0.0)".to_string()]
        );
        assert_eq!(non_special_ip("::ffff:127.0.0.1").len(), 1);
        assert_eq!(non_special_ip("::1").len(), 1);
        assert_eq!(non_special_ip("fe80::1").len(), 1);
        assert_eq!(non_special_ip("224.0.0.5").len(), 1);
        assert_eq!(non_special_ip("ff02::1").len(), 1);
        assert!(non_special_ip("224.0.1.5").is_empty());
    }

    #[test]
    fn odd_address_forms_are_warned_about() {
        assert!(ip_warnings("ip", "10.0.0.1").is_empty());
        assert_eq!(
            ip_warnings("ip", "010.0.0.1"),
            vec!["ip: non-standard IP address \"010.0.0.1\" will be considered invalid in a future Kubernetes release: use \"10.0.0.1\"".to_string()]
        );
        assert_eq!(
            ip_warnings("ip", "::ffff:10.0.0.1"),
            vec!["ip: non-standard IP address \"::ffff:10.0.0.1\" will be considered invalid in a future Kubernetes release: use \"10.0.0.1\"".to_string()]
        );
        assert_eq!(
            ip_warnings("ip", "2001:DB8::1"),
            vec!["ip: IPv6 address \"2001:DB8::1\" should be in RFC 5952 canonical format (\"2001:db8::1\")".to_string()]
        );
        assert!(ip_warnings("ip", "2001:db8::1").is_empty());
    }

    #[test]
    fn subsets_are_strict_and_of_one_family() {
        let p = |s: &str| parse_cidr_sloppy(s).expect("cidr");
        assert!(strict_subset(p("10.0.0.0/8"), p("10.1.0.0/16")));
        assert!(!strict_subset(p("10.0.0.0/8"), p("10.0.0.0/8")));
        assert!(!strict_subset(p("10.0.0.0/8"), p("11.0.0.0/16")));
        assert!(!strict_subset(p("10.0.0.0/8"), p("2001:db8::/64")));
        assert!(strict_subset(p("0.0.0.0/0"), p("192.168.0.0/24")));
    }

    #[test]
    fn wildcard_hosts_need_a_star_label() {
        assert!(wildcard_dns1123_subdomain("*.example.com").is_empty());
        assert_eq!(wildcard_dns1123_subdomain("a.*.com").len(), 1);
        assert_eq!(wildcard_dns1123_subdomain("*").len(), 1);
    }
}
