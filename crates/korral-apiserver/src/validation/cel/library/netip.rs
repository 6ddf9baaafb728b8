//! IP addresses and prefixes parsed as Go's `net/netip` parses them (`ParseAddr`,
//! `ParsePrefix`), with its error messages, and its address classes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::validation::names::go_quote;

/// A parsed address and its zone (`fe80::1%eth0`; empty when absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZonedAddr {
    /// The address.
    pub addr: IpAddr,
    /// The IPv6 zone, empty when absent.
    pub zone: String,
}

/// `ParseAddr(s)`: the address, or Go's error text.
pub fn parse_addr(s: &str) -> Result<ZonedAddr, String> {
    let b = s.as_bytes();
    for &c in b {
        match c {
            b'.' => {
                let mut f = [0u8; 4];
                parse_v4_fields(s, b, &mut f)?;
                return Ok(ZonedAddr {
                    addr: IpAddr::V4(Ipv4Addr::from(f)),
                    zone: String::new(),
                });
            }
            b':' => return parse_v6(s),
            b'%' => return Err(addr_error(s, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(addr_error(s, "unable to parse IP", None))
}

fn addr_error(input: &str, msg: &str, at: Option<&[u8]>) -> String {
    match at {
        Some(at) if !at.is_empty() => format!(
            "ParseAddr({}): {msg} (at {})",
            go_quote(input),
            go_quote(&String::from_utf8_lossy(at))
        ),
        _ => format!("ParseAddr({}): {msg}", go_quote(input)),
    }
}

/// Go's `parseIPv4Fields` over `s` (a part of `input`).
fn parse_v4_fields(input: &str, s: &[u8], fields: &mut [u8; 4]) -> Result<(), String> {
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for (i, &c) in s.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                return Err(addr_error(
                    input,
                    "IPv4 field has octet with leading zero",
                    None,
                ));
            }
            val = val * 10 + u32::from(c - b'0');
            digits += 1;
            if val > 255 {
                return Err(addr_error(input, "IPv4 field has value >255", None));
            }
        } else if c == b'.' {
            if i == 0 || i == s.len() - 1 || s[i - 1] == b'.' {
                return Err(addr_error(
                    input,
                    "IPv4 field must have at least one digit",
                    Some(&s[i..]),
                ));
            }
            if pos == 3 {
                return Err(addr_error(input, "IPv4 address too long", None));
            }
            fields[pos] = val as u8;
            pos += 1;
            val = 0;
            digits = 0;
        } else {
            return Err(addr_error(input, "unexpected character", Some(&s[i..])));
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", None));
    }
    fields[3] = val as u8;
    Ok(())
}

/// Go's `parseIPv6`.
fn parse_v6(input: &str) -> Result<ZonedAddr, String> {
    let all = input.as_bytes();
    let (mut s, zone) = match all.iter().position(|&c| c == b'%') {
        Some(i) => {
            let zone = &input[i + 1..];
            if zone.is_empty() {
                return Err(addr_error(input, "zone must be a non-empty string", None));
            }
            (&all[..i], zone.to_string())
        }
        None => (all, String::new()),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.len() >= 2 && s[0] == b':' && s[1] == b':' {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok(ZonedAddr {
                addr: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                zone,
            });
        }
    }
    let mut i = 0usize;
    while i < 16 {
        let mut off = 0usize;
        let mut acc = 0u32;
        while off < s.len() {
            let c = s[off];
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + u32::from(d);
            if off > 3 {
                return Err(addr_error(
                    input,
                    "each group must have 4 or less digits",
                    Some(s),
                ));
            }
            if acc > u32::from(u16::MAX) {
                return Err(addr_error(input, "IPv6 field has value >=2^16", Some(s)));
            }
            off += 1;
        }
        if off == 0 {
            return Err(addr_error(
                input,
                "each colon-separated field must have at least one digit",
                Some(s),
            ));
        }
        if off < s.len() && s[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return Err(addr_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(s),
                ));
            }
            if i + 4 > 16 {
                return Err(addr_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(s),
                ));
            }
            let mut f = [0u8; 4];
            parse_v4_fields(input, s, &mut f)?;
            ip[i..i + 4].copy_from_slice(&f);
            s = &[];
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' {
            return Err(addr_error(
                input,
                "unexpected character, want colon",
                Some(s),
            ));
        } else if s.len() == 1 {
            return Err(addr_error(
                input,
                "colon must be followed by more characters",
                Some(s),
            ));
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return Err(addr_error(input, "multiple :: in address", Some(s)));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(addr_error(input, "trailing garbage after address", Some(s)));
    }
    if i < 16 {
        let Some(e) = ellipsis else {
            return Err(addr_error(input, "address string too short", None));
        };
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        ip[e..e + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(addr_error(
            input,
            "the :: must expand to at least one field of zeros",
            Some(s),
        ));
    }
    Ok(ZonedAddr {
        addr: IpAddr::V6(Ipv6Addr::from(ip)),
        zone,
    })
}

/// A network prefix: an address (host bits kept) and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// The address as written.
    pub addr: IpAddr,
    /// The prefix length.
    pub bits: u8,
}

/// `ParsePrefix(s)`: the prefix, or Go's error text.
pub fn parse_prefix(s: &str) -> Result<Prefix, String> {
    let fail = |msg: &str| format!("netip.ParsePrefix({}): {msg}", go_quote(s));
    let Some(slash) = s.rfind('/') else {
        return Err(fail("no '/'"));
    };
    let ip = parse_addr(&s[..slash]).map_err(|e| fail(&e))?;
    if ip.addr.is_ipv6() && !ip.zone.is_empty() {
        return Err(fail("IPv6 zones cannot be present in a prefix"));
    }
    let bits_str = &s[slash + 1..];
    let bad_bits = || fail(&format!("bad bits after slash: {}", go_quote(bits_str)));
    let first = bits_str.as_bytes().first().copied();
    if bits_str.len() > 1 && !matches!(first, Some(b'1'..=b'9')) {
        return Err(bad_bits());
    }
    if bits_str.is_empty() || !bits_str.bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad_bits());
    }
    let bits: u32 = bits_str.parse().map_err(|_| bad_bits())?;
    let max = if ip.addr.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return Err(fail("prefix length out of range"));
    }
    Ok(Prefix {
        addr: ip.addr,
        bits: bits as u8,
    })
}

/// The address with every bit past the first `bits` cleared.
pub fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

impl Prefix {
    /// Go's `Prefix.String`.
    pub fn render(&self) -> String {
        format!("{}/{}", self.addr, self.bits)
    }

    /// Go's `Prefix.Masked`.
    pub fn masked(&self) -> Prefix {
        Prefix {
            addr: mask(self.addr, self.bits),
            bits: self.bits,
        }
    }

    /// Go's `Prefix.Contains`: same family, and equal in the prefix bits.
    pub fn contains(&self, ip: IpAddr) -> bool {
        if self.addr.is_ipv4() != ip.is_ipv4() {
            return false;
        }
        mask(ip, self.bits) == mask(self.addr, self.bits)
    }

    /// Go's `Prefix.Overlaps`.
    pub fn overlaps(&self, other: &Prefix) -> bool {
        if self == other {
            return true;
        }
        if self.addr.is_ipv4() != other.addr.is_ipv4() {
            return false;
        }
        let min = self.bits.min(other.bits);
        min == 0 || mask(self.addr, min) == mask(other.addr, min)
    }
}

/// Go's `Addr.Is4In6`.
pub fn is_4in6(addr: IpAddr) -> bool {
    matches!(addr, IpAddr::V6(a) if a.to_ipv4_mapped().is_some())
}

/// Go's `Addr.IsUnspecified`.
pub fn is_unspecified(addr: IpAddr) -> bool {
    addr.is_unspecified()
}

/// Go's `Addr.IsLoopback`: 127.0.0.0/8 and ::1.
pub fn is_loopback(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[0] == 127,
        IpAddr::V6(a) => a == Ipv6Addr::LOCALHOST,
    }
}

/// Go's `Addr.IsMulticast`: 224.0.0.0/4 and ff00::/8.
fn is_multicast(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[0] & 0xf0 == 0xe0,
        IpAddr::V6(a) => a.octets()[0] == 0xff,
    }
}

/// Go's `Addr.IsLinkLocalMulticast`: 224.0.0.0/24 and ff02::/16.
pub fn is_link_local_multicast(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => {
            let o = a.octets();
            o[0] == 224 && o[1] == 0 && o[2] == 0
        }
        IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
    }
}

/// Go's `Addr.IsLinkLocalUnicast`: 169.254.0.0/16 and fe80::/10.
pub fn is_link_local_unicast(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => {
            let o = a.octets();
            o[0] == 169 && o[1] == 254
        }
        IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `Addr.IsGlobalUnicast`: not unspecified, broadcast, loopback, multicast or
/// link-local unicast (private ranges count as global).
pub fn is_global_unicast(addr: IpAddr) -> bool {
    let addr = match addr {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    };
    if addr == IpAddr::V4(Ipv4Addr::BROADCAST) {
        return false;
    }
    !addr.is_unspecified()
        && !is_loopback(addr)
        && !is_multicast(addr)
        && !is_link_local_unicast(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_parse_errors() {
        let e = |s: &str| parse_addr(s).expect_err(s);
        assert_eq!(
            e("192.168.0.1.0"),
            "ParseAddr(\"192.168.0.1.0\"): IPv4 address too long"
        );
        assert_eq!(
            e("2001:db8:::68"),
            "ParseAddr(\"2001:db8:::68\"): each colon-separated field must have at least one digit (at \":68\")"
        );
        assert_eq!(e("invalid"), "ParseAddr(\"invalid\"): unable to parse IP");
        assert_eq!(e("1.2.3"), "ParseAddr(\"1.2.3\"): IPv4 address too short");
        assert_eq!(
            e("01.2.3.4"),
            "ParseAddr(\"01.2.3.4\"): IPv4 field has octet with leading zero"
        );
        assert_eq!(
            e("1.2.3.256"),
            "ParseAddr(\"1.2.3.256\"): IPv4 field has value >255"
        );
        assert_eq!(
            e("1..2.3"),
            "ParseAddr(\"1..2.3\"): IPv4 field must have at least one digit (at \".2.3\")"
        );
        assert_eq!(
            e("fe80::1%"),
            "ParseAddr(\"fe80::1%\"): zone must be a non-empty string"
        );
        assert_eq!(e("1:2:3"), "ParseAddr(\"1:2:3\"): address string too short");
    }

    #[test]
    fn parses_like_go() {
        let a = parse_addr("2001:DB8::68").expect("valid");
        assert_eq!(a.addr.to_string(), "2001:db8::68");
        let z = parse_addr("fe80::1%eth0").expect("valid");
        assert_eq!(z.zone, "eth0");
        assert!(is_4in6(parse_addr("::ffff:1.2.3.4").expect("valid").addr));
        assert_eq!(
            parse_addr("::ffff:1.2.3.4")
                .expect("valid")
                .addr
                .to_string(),
            "::ffff:1.2.3.4"
        );
    }

    #[test]
    fn prefixes() {
        let p = parse_prefix("192.168.0.1/24").expect("valid");
        assert_eq!(p.render(), "192.168.0.1/24");
        assert_eq!(p.masked().render(), "192.168.0.0/24");
        assert_eq!(
            parse_prefix("192.168.0.0/").expect_err("no bits"),
            "netip.ParsePrefix(\"192.168.0.0/\"): bad bits after slash: \"\""
        );
        assert_eq!(
            parse_prefix("1.2.3.4/33").expect_err("range"),
            "netip.ParsePrefix(\"1.2.3.4/33\"): prefix length out of range"
        );
        assert_eq!(
            parse_prefix("1.2.3.4/08").expect_err("leading zero"),
            "netip.ParsePrefix(\"1.2.3.4/08\"): bad bits after slash: \"08\""
        );
        assert_eq!(
            parse_prefix("1.2.3.4").expect_err("slash"),
            "netip.ParsePrefix(\"1.2.3.4\"): no '/'"
        );
        let outer = parse_prefix("2001:db8::/32").expect("valid");
        assert!(outer.contains(parse_addr("2001:db8::1").expect("ip").addr));
        assert!(!outer.contains(parse_addr("1.2.3.4").expect("ip").addr));
        assert!(outer.overlaps(&parse_prefix("2001:db8::/33").expect("valid")));
    }

    #[test]
    fn classes() {
        let ip = |s: &str| parse_addr(s).expect("ip").addr;
        assert!(is_link_local_multicast(ip("224.0.0.1")));
        assert!(!is_link_local_multicast(ip("224.0.1.1")));
        assert!(is_link_local_multicast(ip("ff02::1")));
        assert!(is_link_local_unicast(ip("fe80::1")));
        assert!(!is_link_local_unicast(ip("fd80::1")));
        assert!(is_global_unicast(ip("192.168.0.1")));
        assert!(!is_global_unicast(ip("255.255.255.255")));
        assert!(!is_global_unicast(ip("ff00::1")));
        assert!(is_loopback(ip("127.0.0.1")));
    }
}
