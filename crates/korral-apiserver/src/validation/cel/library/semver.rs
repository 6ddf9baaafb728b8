//! The semver library (`kubernetes.Semver`, version 1): `semver(string[, normalize])`,
//! `isSemver(string[, normalize])`, `major()`, `minor()`, `patch()`, `isGreaterThan()`,
//! `isLessThan()` and `compareTo()`, parsing as blang/semver v4 does, with its messages.

use std::cmp::Ordering;

use cel::common::types::{BOOL_TYPE, STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::{arg, error, function, opaque, opaque_arg, opaque_type, string_arg};
use crate::validation::names::go_quote;

/// The CEL type name of a semantic version.
pub const TYPE_NAME: &str = "kubernetes.Semver";

/// A prerelease identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Str(String),
}

/// A semantic version; equal when they compare equal (build metadata ignored).
#[derive(Debug, Clone)]
pub struct Semver {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    pre: Vec<Pre>,
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// The CEL type of a semantic version.
pub fn semver_type() -> Type {
    opaque_type(TYPE_NAME)
}

const NUMBERS: &str = "0123456789";

fn contains_only(s: &str, extra_letters: bool) -> bool {
    s.chars()
        .all(|c| NUMBERS.contains(c) || (extra_letters && (c.is_ascii_alphabetic() || c == '-')))
}

fn leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` error text.
fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(s)
        )
    })
}

fn number(s: &str, what: &str, capital: &str) -> Result<u64, String> {
    if !contains_only(s, false) {
        return Err(format!(
            "Invalid character(s) found in {what} number {}",
            go_quote(s)
        ));
    }
    if leading_zero(s) {
        return Err(format!(
            "{capital} number must not contain leading zeroes {}",
            go_quote(s)
        ));
    }
    parse_uint(s)
}

/// blang/semver's `Parse`.
pub fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".into());
    }
    let major = number(parts[0], "major", "Major")?;
    let minor = number(parts[1], "minor", "Minor")?;
    let mut patch_str = parts[2];
    let mut build: Vec<&str> = Vec::new();
    if let Some(i) = patch_str.find('+') {
        build = patch_str[i + 1..].split('.').collect();
        patch_str = &patch_str[..i];
    }
    let mut pre_strs: Vec<&str> = Vec::new();
    if let Some(i) = patch_str.find('-') {
        pre_strs = patch_str[i + 1..].split('.').collect();
        patch_str = &patch_str[..i];
    }
    let patch = number(patch_str, "patch", "Patch")?;
    let mut pre = Vec::new();
    for p in pre_strs {
        if p.is_empty() {
            return Err("Prerelease is empty".into());
        }
        if contains_only(p, false) {
            if leading_zero(p) {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {}",
                    go_quote(p)
                ));
            }
            pre.push(Pre::Num(parse_uint(p)?));
        } else if contains_only(p, true) {
            pre.push(Pre::Str(p.to_string()));
        } else {
            return Err(format!(
                "Invalid character(s) found in prerelease {}",
                go_quote(p)
            ));
        }
    }
    for b in build {
        if b.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !contains_only(b, true) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                go_quote(b)
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre,
    })
}

/// Upstream's `normalizeAndParse`: a leading `v` dropped, leading zeros trimmed, missing
/// minor and patch filled with zeros.
pub fn normalize_and_parse(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() > 1 {
                let t = p.trim_start_matches('0');
                if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("0{t}")
                } else {
                    t.to_string()
                }
            } else {
                p.to_string()
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        while parts.len() < 3 {
            parts.push("0".into());
        }
    }
    parse(&parts.join("."))
}

impl Semver {
    /// blang/semver's `Compare`.
    pub fn compare(&self, other: &Self) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let o = match (a, b) {
                (Pre::Num(x), Pre::Num(y)) => x.cmp(y),
                (Pre::Num(_), Pre::Str(_)) => Ordering::Less,
                (Pre::Str(_), Pre::Num(_)) => Ordering::Greater,
                (Pre::Str(x), Pre::Str(y)) => x.cmp(y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

/// The CEL value of version string `s`, as `semver(s)` makes it.
pub fn value_of(s: &str) -> Result<Value, String> {
    parse(s).map(opaque)
}

fn convert(args: &[Value]) -> Result<Semver, String> {
    let s = string_arg(args, 0).map_err(|e| e.to_string())?;
    match arg(args, 1) {
        Ok(Value::Bool(true)) => normalize_and_parse(s),
        _ => parse(s),
    }
}

fn v(args: &[Value], i: usize) -> Result<&Semver, ExecutionError> {
    opaque_arg::<Semver>(args, i)
}

fn compare(args: &[Value]) -> Result<Ordering, ExecutionError> {
    Ok(v(args, 0)?.compare(v(args, 1)?))
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let t = semver_type;
    env.add_type(t())?;
    let to_semver = function!(|a| convert(a).map(opaque).map_err(|e| error("semver", e)));
    let is_semver = function!(|a| Ok(Value::Bool(convert(a).is_ok())));
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        to_semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        t(),
        vec![t()],
        function!(|a| Ok(Value::Bool(compare(a)? == Ordering::Greater))),
    )?;
    env.add_member_overload(
        "isLessThan",
        "semver_is_less_than",
        t(),
        vec![t()],
        function!(|a| Ok(Value::Bool(compare(a)? == Ordering::Less))),
    )?;
    env.add_member_overload(
        "compareTo",
        "semver_compare_to",
        t(),
        vec![t()],
        function!(|a| Ok(Value::Int(compare(a)? as i64))),
    )?;
    env.add_member_overload(
        "major",
        "semver_major",
        t(),
        vec![],
        function!(|a| Ok(Value::Int(v(a, 0)?.major as i64))),
    )?;
    env.add_member_overload(
        "minor",
        "semver_minor",
        t(),
        vec![],
        function!(|a| Ok(Value::Int(v(a, 0)?.minor as i64))),
    )?;
    env.add_member_overload(
        "patch",
        "semver_patch",
        t(),
        vec![],
        function!(|a| Ok(Value::Int(v(a, 0)?.patch as i64))),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{failure, truth};

    #[test]
    fn upstream_cases() {
        for expr in [
            "isSemver('1.0.0') && !isSemver('v1.0') && isSemver('v1.0', true)",
            "!isSemver('1.0') && isSemver('1.2.3-alpha.1+build.5')",
            "semver('1.0.0') == semver('1.0.0+build') && semver('1.0.0') != semver('1.0.1')",
            "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
            "semver('1.0.0').isGreaterThan(semver('1.0.0-rc.1'))",
            "semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",
            "semver('1.0.0-alpha.beta').compareTo(semver('1.0.0-alpha.1')) == 1",
            "semver('2.0.0').compareTo(semver('10.0.0')) == -1",
            "semver('v01.02', true) == semver('1.2.0')",
        ] {
            assert!(truth(expr), "{expr}");
        }
        assert_eq!(
            failure("semver('1.0')"),
            "No Major.Minor.Patch elements found"
        );
        assert_eq!(
            failure("semver('01.0.0')"),
            "Major number must not contain leading zeroes \"01\""
        );
        assert_eq!(
            failure("semver('1.x.0')"),
            "Invalid character(s) found in minor number \"x\""
        );
        assert_eq!(
            failure("semver('v1.0-rc', true)"),
            "short version cannot contain PreRelease/Build meta data"
        );
    }
}
