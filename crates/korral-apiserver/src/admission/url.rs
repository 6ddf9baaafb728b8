//! Webhook URLs split as Go's `net/url.Parse` splits them (scheme, user, host, path, query,
//! fragment), for validation and for calling the webhook.

/// A webhook URL in its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WebhookUrl {
    /// The scheme, lower-cased (`https`); empty when missing.
    pub scheme: String,
    /// User information before `@`, when present.
    pub user: Option<String>,
    /// The host (name or IP, IPv6 without brackets), without the port.
    pub host: String,
    /// The port, when given.
    pub port: Option<u16>,
    /// The path (may be empty).
    pub path: String,
    /// The raw query after `?`, when present.
    pub query: Option<String>,
    /// The fragment after `#`, when present.
    pub fragment: Option<String>,
}

/// Why a URL cannot be parsed, worded as Go's `url.Error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parse {url:?}: {why}")]
pub(crate) struct UrlError {
    /// The URL.
    pub url: String,
    /// What is wrong.
    pub why: String,
}

impl WebhookUrl {
    /// Splits `raw` into its parts.
    pub(crate) fn parse(raw: &str) -> Result<Self, UrlError> {
        let fail = |why: String| UrlError {
            url: raw.to_string(),
            why,
        };
        if raw.chars().any(|c| c.is_ascii_control()) {
            return Err(fail("net/url: invalid control character in URL".into()));
        }
        let (rest, fragment) = match raw.split_once('#') {
            Some((r, f)) => (r, Some(f.to_string())),
            None => (raw, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q.to_string())),
            None => (rest, None),
        };
        let (scheme, rest) = match rest.split_once(':') {
            Some((s, r))
                if !s.is_empty()
                    && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
            {
                (s.to_ascii_lowercase(), r)
            }
            Some(("", _)) => return Err(fail("missing protocol scheme".into())),
            _ => (String::new(), rest),
        };
        let (authority, path) = match rest.strip_prefix("//") {
            Some(after) => match after.find('/') {
                Some(i) => (&after[..i], after[i..].to_string()),
                None => (after, String::new()),
            },
            None => ("", rest.to_string()),
        };
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_string()), h),
            None => (None, authority),
        };
        let (host, port) = split_host_port(hostport).map_err(fail)?;
        Ok(Self {
            scheme,
            user,
            host,
            port,
            path,
            query,
            fragment,
        })
    }
}

/// Splits `host[:port]` (`[v6]:port` for IPv6).
fn split_host_port(hostport: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(after) = hostport.strip_prefix('[') {
        let Some((h, rest)) = after.split_once(']') else {
            return Err("missing ']' in host".into());
        };
        match rest {
            "" => (h, None),
            r => match r.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None => return Err(format!("invalid port {r:?} after host")),
            },
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) => Some(n),
            Err(_) => return Err(format!("invalid port \":{p}\" after host")),
        },
    };
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_go() {
        let u = WebhookUrl::parse("https://u:p@127.0.0.1:9443/a/b?x=1#f").expect("test value");
        assert_eq!(u.scheme, "https");
        assert_eq!(u.user.as_deref(), Some("u:p"));
        assert_eq!(u.host, "127.0.0.1");
        assert_eq!(u.port, Some(9443));
        assert_eq!(u.path, "/a/b");
        assert_eq!(u.query.as_deref(), Some("x=1"));
        assert_eq!(u.fragment.as_deref(), Some("f"));
        let v6 = WebhookUrl::parse("https://[::1]/x").expect("test value");
        assert_eq!((v6.host.as_str(), v6.port), ("::1", None));
        let bare = WebhookUrl::parse("example.com/x").expect("test value");
        assert_eq!((bare.scheme.as_str(), bare.host.as_str()), ("", ""));
        assert!(WebhookUrl::parse("https://a:b/").is_err());
        assert!(WebhookUrl::parse("://a").is_err());
    }
}
