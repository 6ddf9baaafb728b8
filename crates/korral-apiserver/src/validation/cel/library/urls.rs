//! The URL library (`kubernetes.urls`): `url(string)`, `isURL(string)` and the parts of a
//! URL: `getScheme()`, `getHost()`, `getHostname()`, `getPort()`, `getEscapedPath()` and
//! `getQuery()`. A URL must be an absolute URI or an absolute path (Go's `ParseRequestURI`).

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::{Key, Map, Opaque};
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::urlparse::{self, Url};
use super::{error, function, opaque, opaque_arg, opaque_type, string_arg, string_list};

/// The CEL type name of a URL.
pub const TYPE_NAME: &str = "kubernetes.URL";

/// A parsed URL as a CEL value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlValue(pub Url);

impl Opaque for UrlValue {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// The CEL type of a URL.
pub fn url_type() -> Type {
    opaque_type(TYPE_NAME)
}

/// Parses a URL as upstream's `url(string)`: checked with `ParseRequestURI`, then parsed
/// with `Parse` (which splits off the fragment).
pub fn parse(raw: &str) -> Result<Url, String> {
    let checked = urlparse::parse_request_uri(raw).and_then(|_| urlparse::parse_reference(raw));
    checked.map_err(|e| format!("URL parse error during conversion from string: {e}"))
}

fn text(s: impl Into<String>) -> Value {
    Value::String(Arc::new(s.into()))
}

fn url_of(args: &[Value]) -> Result<&Url, ExecutionError> {
    Ok(&opaque_arg::<UrlValue>(args, 0)?.0)
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(url_type())?;
    env.add_overload(
        "url",
        "string_to_url",
        vec![STRING_TYPE],
        function!(|a| parse(string_arg(a, 0)?)
            .map(|u| opaque(UrlValue(u)))
            .map_err(|e| error("url", e))),
    )?;
    env.add_overload(
        "isURL",
        "is_url_string",
        vec![STRING_TYPE],
        function!(|a| Ok(Value::Bool(
            urlparse::parse_request_uri(string_arg(a, 0)?).is_ok()
        ))),
    )?;
    env.add_member_overload(
        "getScheme",
        "url_get_scheme",
        url_type(),
        vec![],
        function!(|a| Ok(text(url_of(a)?.scheme.clone()))),
    )?;
    env.add_member_overload(
        "getHost",
        "url_get_host",
        url_type(),
        vec![],
        function!(|a| Ok(text(url_of(a)?.host.clone()))),
    )?;
    env.add_member_overload(
        "getHostname",
        "url_get_hostname",
        url_type(),
        vec![],
        function!(|a| Ok(text(url_of(a)?.hostname()))),
    )?;
    env.add_member_overload(
        "getPort",
        "url_get_port",
        url_type(),
        vec![],
        function!(|a| Ok(text(url_of(a)?.port()))),
    )?;
    env.add_member_overload(
        "getEscapedPath",
        "url_get_escaped_path",
        url_type(),
        vec![],
        function!(|a| Ok(text(url_of(a)?.escaped_path()))),
    )?;
    env.add_member_overload(
        "getQuery",
        "url_get_query",
        url_type(),
        vec![],
        function!(query),
    )?;
    Ok(())
}

fn query(args: &[Value]) -> Result<Value, ExecutionError> {
    let entries: HashMap<Key, Value> = url_of(args)?
        .query()
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::new(k)), string_list(v)))
        .collect();
    Ok(Value::Map(Map {
        map: Arc::new(entries),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{failure, truth};

    #[test]
    fn upstream_examples() {
        for expr in [
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
            "isURL('/absolute-path')",
            "!isURL('https://a:b:c/')",
            "!isURL('../relative-path')",
            "url('/path').getScheme() == ''",
            "url('https://example.com/').getScheme() == 'https'",
            "url('https://example.com:80/').getHost() == 'example.com:80'",
            "url('https://example.com/').getHost() == 'example.com'",
            "url('https://[::1]:80/').getHost() == '[::1]:80'",
            "url('https://[::1]/').getHost() == '[::1]'",
            "url('/path').getHost() == ''",
            "url('https://example.com:80/').getHostname() == 'example.com'",
            "url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'",
            "url('https://[::1]:80/').getHostname() == '::1'",
            "url('/path').getHostname() == ''",
            "url('https://example.com:80/').getPort() == '80'",
            "url('https://example.com/').getPort() == ''",
            "url('/path').getPort() == ''",
            "url('https://example.com/path').getEscapedPath() == '/path'",
            "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
            "url('https://example.com').getEscapedPath() == ''",
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
            "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}",
            "url('https://example.com/path?').getQuery() == {}",
            "url('https://example.com/path').getQuery() == {}",
            "url('https://example.com/a#frag') == url('https://example.com/a#frag')",
        ] {
            assert!(truth(expr), "{expr}");
        }
    }

    #[test]
    fn errors() {
        assert_eq!(
            failure("url('https://a:b:c/')"),
            "URL parse error during conversion from string: parse \"https://a:b:c/\": invalid port \":c\" after host"
        );
        assert_eq!(
            failure("url('../relative-path')"),
            "URL parse error during conversion from string: parse \"../relative-path\": invalid URI for request"
        );
    }
}
