//! URLs parsed as Go's `net/url` parses them (`Parse`, `ParseRequestURI`), with its error
//! messages, and the parts upstream's URL library reads (`EscapedPath`, `Hostname`, `Port`,
//! `Query`).

use crate::validation::names::go_quote;

/// A parsed URL (Go's `url.URL`, the fields the library reads).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Url {
    /// The scheme, lowercased.
    pub scheme: String,
    /// The opaque part of a rootless URL (`mailto:x`).
    pub opaque: String,
    /// The user information, as written.
    pub user: Option<String>,
    /// `host` or `host:port`.
    pub host: String,
    /// The decoded path.
    pub path: Vec<u8>,
    /// The path as written when its default encoding differs.
    pub raw_path: String,
    /// The query without `?`.
    pub raw_query: String,
    /// The decoded fragment.
    pub fragment: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `url.ParseRequestURI`: an absolute URI or an absolute path, no fragment split.
pub fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse(raw, true).map_err(|e| format!("parse {}: {e}", go_quote(raw)))
}

/// Go's `url.Parse`: a URL reference with an optional `#fragment`.
pub fn parse_reference(raw: &str) -> Result<Url, String> {
    let (u, frag) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse(u, false).map_err(|e| format!("parse {}: {e}", go_quote(u)))?;
    if !frag.is_empty() {
        url.fragment = unescape(frag.as_bytes(), Mode::Fragment)
            .map_err(|e| format!("parse {}: {e}", go_quote(raw)))?;
    }
    Ok(url)
}

fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = b"*".to_vec();
        return Ok(url);
    }
    let (scheme, mut rest) = scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        url.raw_query = q.to_string();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_string();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && rest.starts_with("//")
    {
        let authority_and_path = &rest[2..];
        let (authority, path) = match authority_and_path.find('/') {
            Some(i) => (&authority_and_path[..i], &authority_and_path[i..]),
            None => (authority_and_path, ""),
        };
        let (user, host) = authority_parts(authority)?;
        url.user = user;
        url.host = host;
        rest = path;
    }
    url.path = unescape(rest.as_bytes(), Mode::Path)?;
    if escape(&url.path, Mode::Path) != rest {
        url.raw_path = rest.to_string();
    }
    Ok(url)
}

/// Go's `getScheme`: the scheme and the rest, or no scheme.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn authority_parts(authority: &str) -> Result<(Option<String>, String), String> {
    let at = authority.rfind('@');
    let host = parse_host(match at {
        Some(i) => &authority[i + 1..],
        None => authority,
    })?;
    let Some(i) = at else {
        return Ok((None, host));
    };
    let userinfo = &authority[..i];
    if !valid_userinfo(userinfo) {
        return Err("net/url: invalid userinfo".into());
    }
    for part in userinfo.splitn(2, ':') {
        unescape(part.as_bytes(), Mode::UserPassword)?;
    }
    Ok((Some(userinfo.to_string()), host))
}

fn valid_userinfo(s: &str) -> bool {
    s.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
            || !c.is_ascii()
    })
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
        // Only an IPv6 address may be in brackets.
        let inner = &host[1..i];
        let literal = inner.split("%25").next().unwrap_or(inner);
        match super::netip::parse_addr(literal) {
            Ok(a) if a.addr.is_ipv6() => {}
            Ok(_) => return Err("invalid IP-literal".into()),
            Err(e) => return Err(format!("invalid host: {e}")),
        }
        if let Some(zone) = host[..i].find("%25") {
            let a = unescape(&host.as_bytes()[..zone], Mode::Host)?;
            let b = unescape(&host.as_bytes()[zone..i], Mode::Zone)?;
            let c = unescape(&host.as_bytes()[i..], Mode::Host)?;
            return Ok(String::from_utf8_lossy(&[a, b, c].concat()).into_owned());
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    Ok(String::from_utf8_lossy(&unescape(host.as_bytes(), Mode::Host)?).into_owned())
}

fn unhex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Go's `unescape`.
fn unescape(s: &[u8], mode: Mode) -> Result<Vec<u8>, String> {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                let (hi, lo) = match (s.get(i + 1), s.get(i + 2)) {
                    (Some(&h), Some(&l)) if unhex(h).is_some() && unhex(l).is_some() => (h, l),
                    _ => {
                        let end = (i + 3).min(s.len());
                        return Err(format!(
                            "invalid URL escape {}",
                            go_quote(&lossy(&s[i..end]))
                        ));
                    }
                };
                let v = unhex(hi).unwrap_or(0) << 4 | unhex(lo).unwrap_or(0);
                let escape = &s[i..i + 3];
                if mode == Mode::Host && unhex(hi).unwrap_or(0) < 8 && escape != b"%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&lossy(escape))));
                }
                if mode == Mode::Zone
                    && escape != b"%25"
                    && v != b' '
                    && should_escape(v, Mode::Host)
                {
                    return Err(format!("invalid URL escape {}", go_quote(&lossy(escape))));
                }
                i += 3;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&lossy(&s[i..i + 1]))
                    ));
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                let digit = |j: usize| s.get(j).copied().and_then(unhex).unwrap_or(0);
                out.push(digit(i + 1) << 4 | digit(i + 2));
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

/// Go's `escape`.
fn escape(s: &[u8], mode: Mode) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len());
    for &c in s {
        if should_escape(c, mode) {
            if c == b' ' && mode == Mode::QueryComponent {
                out.push('+');
            } else {
                out.push('%');
                out.push(char::from(HEX[usize::from(c >> 4)]));
                out.push(char::from(HEX[usize::from(c & 15)]));
            }
        } else {
            out.push(char::from(c));
        }
    }
    out
}

fn valid_encoded(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, Mode::Path)
    })
}

/// Go's `splitHostPort`.
fn split_host_port(host_port: &str) -> (&str, &str) {
    let (mut host, mut port) = (host_port, "");
    if let Some(colon) = host.rfind(':')
        && valid_optional_port(&host[colon..])
    {
        port = &host[colon + 1..];
        host = &host[..colon];
    }
    if host.len() >= 2 && host.starts_with('[') && host.ends_with(']') {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

impl Url {
    /// Go's `EscapedPath`.
    pub fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path)
            && unescape(self.raw_path.as_bytes(), Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return "*".into();
        }
        escape(&self.path, Mode::Path)
    }

    /// Go's `Hostname`: the host without port or IPv6 brackets.
    pub fn hostname(&self) -> &str {
        split_host_port(&self.host).0
    }

    /// Go's `Port`.
    pub fn port(&self) -> &str {
        split_host_port(&self.host).1
    }

    /// Go's `Query`: every key's values in order, keys and values unescaped; malformed pairs
    /// are skipped.
    pub fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(k), Ok(v)) = (
                unescape(k.as_bytes(), Mode::QueryComponent),
                unescape(v.as_bytes(), Mode::QueryComponent),
            ) else {
                continue;
            };
            let (k, v) = (lossy(&k), lossy(&v));
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, values)) => values.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_uris() {
        assert!(parse_request_uri("/absolute-path").is_ok());
        assert_eq!(
            parse_request_uri("https://a:b:c/").expect_err("bad port"),
            "parse \"https://a:b:c/\": invalid port \":c\" after host"
        );
        assert_eq!(
            parse_request_uri("../relative-path").expect_err("relative"),
            "parse \"../relative-path\": invalid URI for request"
        );
        assert_eq!(
            parse_request_uri("").expect_err("empty"),
            "parse \"\": empty url"
        );
        assert_eq!(
            parse_request_uri(":x").expect_err("no scheme"),
            "parse \":x\": missing protocol scheme"
        );
        assert_eq!(
            parse_request_uri("http://x/%zz").expect_err("escape"),
            "parse \"http://x/%zz\": invalid URL escape \"%zz\""
        );
    }

    #[test]
    fn parts() {
        let u = parse_reference("https://user:pass@[::1]:80/path with spaces/?k1=a&k2=b&k2=c#frag")
            .expect("valid");
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "[::1]:80");
        assert_eq!(u.hostname(), "::1");
        assert_eq!(u.port(), "80");
        assert_eq!(u.escaped_path(), "/path%20with%20spaces/");
        assert_eq!(
            u.query(),
            vec![
                ("k1".to_string(), vec!["a".to_string()]),
                ("k2".to_string(), vec!["b".to_string(), "c".to_string()])
            ]
        );
        let v = parse_reference("https://example.com/a%2Fb").expect("valid");
        assert_eq!(v.escaped_path(), "/a%2Fb");
    }
}
