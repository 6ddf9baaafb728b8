//! The regex library (`kubernetes.regex`): `find(pattern)` and `findAll(pattern[, limit])`
//! on strings, with Go's rules for successive matches (an empty match right after a match is
//! skipped).

use std::sync::{Arc, LazyLock, Mutex};

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::{DeclarationError, Env, ExecutionError, Value};
use regex::Regex;

use super::{error, function, int_arg, string_arg, string_list};

/// Patterns compiled recently; emptied when full.
const CACHE_ENTRIES: usize = 256;

/// Compiles `pattern` (from the cache when it was compiled before).
fn compile(function: &str, pattern: &str) -> Result<Arc<Regex>, ExecutionError> {
    static CACHE: LazyLock<Mutex<std::collections::HashMap<String, Arc<Regex>>>> =
        LazyLock::new(Mutex::default);
    if let Some(re) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).get(pattern) {
        return Ok(re.clone());
    }
    let re = Arc::new(Regex::new(pattern).map_err(|e| {
        error(
            function,
            format!("Illegal regex: error parsing regexp: {e}"),
        )
    })?);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= CACHE_ENTRIES {
        cache.clear();
    }
    cache.insert(pattern.to_string(), re.clone());
    Ok(re)
}

/// Go's `FindAllString(s, n)`: at most `n` matches (all when negative).
fn find_all<'s>(re: &Regex, s: &'s str, n: i64) -> Vec<&'s str> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut prev_end: Option<usize> = None;
    while (n < 0 || (out.len() as i64) < n) && pos <= s.len() {
        let Some(m) = re.find_at(s, pos) else {
            break;
        };
        let mut accept = true;
        if m.end() == m.start() {
            if Some(m.start()) == prev_end {
                accept = false;
            }
            pos = s[m.end()..]
                .chars()
                .next()
                .map_or(s.len() + 1, |c| m.end() + c.len_utf8());
        } else {
            pos = m.end();
        }
        prev_end = Some(m.end());
        if accept {
            out.push(m.as_str());
        }
    }
    out
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        function!(|a| {
            let re = compile("find", string_arg(a, 1)?)?;
            let found = re.find(string_arg(a, 0)?).map_or("", |m| m.as_str());
            Ok(Value::String(Arc::new(found.to_string())))
        }),
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        function!(|a| {
            let re = compile("findAll", string_arg(a, 1)?)?;
            Ok(string_list(find_all(&re, string_arg(a, 0)?, -1)))
        }),
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        function!(|a| {
            let re = compile("findAll", string_arg(a, 1)?)?;
            Ok(string_list(find_all(
                &re,
                string_arg(a, 0)?,
                int_arg(a, 2)?,
            )))
        }),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{failure, truth};

    #[test]
    fn upstream_examples() {
        for expr in [
            "'abc 123'.find('[0-9]+') == '123'",
            "'abc 123'.find('xyz') == ''",
            "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
            "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
            "'123 abc 456'.findAll('xyz') == []",
            "'123 abc 456'.findAll('[0-9]+', 0) == []",
            "'baaab'.findAll('a*') == ['', 'aaa', '']",
        ] {
            assert!(truth(expr), "{expr}");
        }
        assert!(failure("'x'.find('(')").starts_with("Illegal regex: "));
    }
}
