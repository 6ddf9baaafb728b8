//! Label and field selectors: the `labelSelector` and `fieldSelector` list/watch parameters.
//!
//! The parsers follow upstream's `k8s.io/apimachinery/pkg/labels` and `pkg/fields` packages
//! closely, including their error messages, so a malformed selector answers the same
//! `400 BadRequest` text a real kube-apiserver does (e.g.
//! `unable to parse requirement: found '', expected: ',' or ')'`).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::error::ApiError;

// ---------------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------------

/// The operator of one label selector requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `key=value`.
    Equals,
    /// `key==value`.
    DoubleEquals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>5`: the label is an integer greater than the value.
    GreaterThan,
    /// `key<5`: the label is an integer less than the value.
    LessThan,
}

/// One requirement of a label selector: a key, an operator and (for most operators) values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// As given; sorted and de-duplicated when parsed from a selector string, as upstream does.
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement, validating it as upstream's `labels.NewRequirement` does.
    ///
    /// `path` is the field path prefix used in messages (`None` renders like upstream's nil path).
    /// The error is upstream's aggregated message, e.g.
    /// `values[0][a]: Invalid value: "-x": a valid label must be ...`.
    pub fn new(
        key: &str,
        operator: Operator,
        values: Vec<String>,
        path: Option<&str>,
    ) -> Result<Self, String> {
        let mut errs: Vec<String> = Vec::new();
        let child = |name: &str| match path {
            Some(p) if !p.is_empty() => format!("{p}.{name}"),
            _ => name.to_string(),
        };
        let key_errs = label_key_errors(key);
        if !key_errs.is_empty() {
            errs.push(field_invalid(&child("key"), key, &key_errs.join("; ")));
        }
        let values_path = child("values");
        match operator {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    // Upstream passes a nil slice here, which renders as `null`.
                    errs.push(format!(
                        "{values_path}: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
                    ));
                }
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    errs.push(format!(
                        "{values_path}: Invalid value: {}: exact-match compatibility requires one single value",
                        render_string_list(&values)
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(format!(
                        "{values_path}: Invalid value: {}: values set must be empty for exists and does not exist",
                        render_string_list(&values)
                    ));
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(format!(
                        "{values_path}: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                        render_string_list(&values)
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if parse_go_int(v).is_none() {
                        errs.push(field_invalid(
                            &format!("{values_path}[{i}]"),
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = label_value_errors(v);
            if !value_errs.is_empty() {
                errs.push(field_invalid(
                    &format!("{values_path}[{i}][{key}]"),
                    v,
                    &value_errs.join("; "),
                ));
            }
        }
        if errs.is_empty() {
            Ok(Self {
                key: key.to_string(),
                operator,
                values,
            })
        } else {
            Err(aggregate(errs))
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }

    /// Whether the requirement holds for the given labels.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let present = labels.is_some_and(|l| l.contains_key(&self.key));
        let value = labels
            .and_then(|l| l.get(&self.key))
            .and_then(Value::as_str);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => match value {
                None => !present,
                Some(v) => !self.has_value(v),
            },
            Operator::Exists => present,
            Operator::DoesNotExist => !present,
            Operator::GreaterThan | Operator::LessThan => {
                let Some(label) = value.and_then(parse_go_int) else {
                    return false;
                };
                let Some(wanted) = self.values.first().and_then(|v| parse_go_int(v)) else {
                    return false;
                };
                if self.values.len() != 1 {
                    return false;
                }
                if self.operator == Operator::GreaterThan {
                    label > wanted
                } else {
                    label < wanted
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        let mut values = self.values.clone();
        values.sort();
        f.write_str(&values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: the AND of its requirements.
///
/// An empty selector matches everything; [`LabelSelector::nothing`] matches nothing (what a
/// missing `spec.selector` object converts to upstream).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// The selector matching no object.
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses a `labelSelector` query value with upstream's syntax; errors are `400 BadRequest`
    /// with upstream's message.
    pub fn parse(selector: &str) -> Result<Self, ApiError> {
        Self::parse_str(selector).map_err(ApiError::bad_request)
    }

    /// Like [`LabelSelector::parse`], returning upstream's bare error text.
    pub fn parse_str(selector: &str) -> Result<Self, String> {
        let mut parser = Parser {
            items: lex(selector),
            pos: 0,
        };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            nothing: false,
        })
    }

    /// Builds a selector from requirements.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self {
            requirements,
            nothing: false,
        }
    }

    /// The requirements, sorted by key.
    #[cfg(test)]
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True when the selector has no requirement and matches everything.
    #[cfg(test)]
    pub fn is_everything(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// The value a requirement `key=v`, `key==v` or `key in (v)` pins `key` to, if any.
    #[cfg(test)]
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == key)?;
        match r.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In if r.values.len() == 1 => {
                r.values.first().map(String::as_str)
            }
            _ => None,
        }
    }

    /// Whether an object with these `metadata.labels` matches (`None`: the object has no labels).
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = ApiError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Converts a `metav1.LabelSelector` object (`matchLabels` + `matchExpressions`) into a selector,
/// as upstream's `LabelSelectorAsSelector`: `null` matches nothing, `{}` matches everything.
///
/// Errors carry upstream's text, e.g. `"Foo" is not a valid label selector operator`.
pub fn from_label_selector_json(sel: &Value) -> Result<LabelSelector, String> {
    let obj = match sel {
        Value::Null => return Ok(LabelSelector::nothing()),
        Value::Object(obj) => obj,
        other => {
            return Err(format!(
                "label selector must be an object, not {}",
                json_kind(other)
            ));
        }
    };
    let mut requirements = Vec::new();
    match obj.get("matchLabels") {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) => {
            for (k, v) in labels {
                let value = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => {
                        return Err(format!(
                            "matchLabels[{k}] must be a string, not {}",
                            json_kind(other)
                        ));
                    }
                };
                requirements.push(Requirement::new(k, Operator::Equals, vec![value], None)?);
            }
        }
        Some(other) => {
            return Err(format!(
                "matchLabels must be an object, not {}",
                json_kind(other)
            ));
        }
    }
    match obj.get("matchExpressions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(exprs)) => {
            for expr in exprs {
                let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
                let op_name = expr
                    .get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let operator = match op_name {
                    "In" => Operator::In,
                    "NotIn" => Operator::NotIn,
                    "Exists" => Operator::Exists,
                    "DoesNotExist" => Operator::DoesNotExist,
                    other => {
                        return Err(format!(
                            "{} is not a valid label selector operator",
                            go_quote(other)
                        ));
                    }
                };
                let values = match expr.get("values") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(vals)) => vals
                        .iter()
                        .map(|v| v.as_str().unwrap_or_default().to_string())
                        .collect(),
                    Some(other) => {
                        return Err(format!(
                            "matchExpressions values must be an array, not {}",
                            json_kind(other)
                        ));
                    }
                };
                requirements.push(Requirement::new(key, operator, values, None)?);
            }
        }
        Some(other) => {
            return Err(format!(
                "matchExpressions must be an array, not {}",
                json_kind(other)
            ));
        }
    }
    Ok(LabelSelector::from_requirements(requirements))
}

// --- lexer -----------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Tokenizes the whole selector, as upstream's `Parser.scan` does up front.
fn lex(s: &str) -> Vec<(Token, String)> {
    let bytes = s.as_bytes();
    let mut pos = 0;
    let mut items = Vec::new();
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() {
            items.push((Token::EndOfString, String::new()));
            return items;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            // Longest run of special symbols that still forms a token.
            let mut last: Option<(Token, usize)> = None;
            while pos < bytes.len() && is_special(bytes[pos]) {
                let candidate = &s[start..=pos];
                if let Some(tok) = keyword(candidate) {
                    last = Some((tok, pos + 1));
                } else if last.is_some() {
                    break;
                }
                pos += 1;
            }
            match last {
                Some((tok, end)) => {
                    items.push((tok, s[start..end].to_string()));
                    pos = end;
                }
                None => {
                    // Unreachable with the current symbol set: every single symbol is a token.
                    items.push((Token::EndOfString, String::new()));
                    return items;
                }
            }
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_whitespace(bytes[pos]) {
                pos += 1;
            }
            let lit = s[start..pos].to_string();
            let tok = keyword(&lit).unwrap_or(Token::Identifier);
            items.push((tok, lit));
        }
    }
}

// --- parser ----------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    pos: usize,
}

impl Parser {
    fn item(&self, context: Context) -> (Token, String) {
        let (tok, lit) = self
            .items
            .get(self.pos)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        let tok = match (context, tok) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            (_, t) => t,
        };
        (tok, lit)
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.item(context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.item(context);
        if self.pos < self.items.len() {
            self.pos += 1;
        }
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return Requirement::new(&key, op, Vec::new(), None);
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, operator, values.into_iter().collect(), None)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = label_key_errors(&lit);
        if !errs.is_empty() {
            return Err(field_invalid("<nil>", &lit, &errs.join("; ")));
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Token::EndOfString || next == Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((lit, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok2 == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            return Ok(BTreeSet::from([lit]));
        }
        Err(format!("found '{lit}', expected: identifier"))
    }
}

// --- validation (upstream `content.IsLabelKey` / `IsLabelValue`) -------------------------------

/// Upstream's `IsQualifiedName` errors for a label key (empty when valid).
pub fn label_key_errors(key: &str) -> Vec<String> {
    crate::validation::names::validate_label_key(key)
}

/// Upstream's `IsValidLabelValue` errors for a label value (empty when valid).
pub fn label_value_errors(value: &str) -> Vec<String> {
    crate::validation::names::validate_label_value(value)
}

fn field_invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// Upstream's aggregate rendering: one message alone, several as `[a, b]` (duplicates dropped).
fn aggregate(errs: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        seen.pop().unwrap_or_default()
    } else {
        format!("[{}]", seen.join(", "))
    }
}

/// A JSON rendering of a string list, as `field.Invalid` prints a `[]string` bad value.
fn render_string_list(values: &[String]) -> String {
    Value::from(values.to_vec()).to_string()
}

/// Go's `strconv.ParseInt(s, 10, 64)`.
fn parse_go_int(s: &str) -> Option<i64> {
    s.parse::<i64>().ok()
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Go's `%q` for a string: double-quoted with Go escapes.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------------

/// One `field=value` / `field!=value` term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    /// The field, e.g. `metadata.name` (taken literally, not trimmed, as upstream).
    pub field: String,
    /// The unescaped value.
    pub value: String,
    /// True for `!=`.
    pub not_equal: bool,
}

impl FieldTerm {
    /// Whether the term holds; a missing field reads as the empty string, as upstream's
    /// `fields.Set` lookups do.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let actual = actual.unwrap_or("");
        (actual == self.value) != self.not_equal
    }
}

impl fmt::Display for FieldTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.not_equal { "!=" } else { "=" };
        write!(f, "{}{op}{}", self.field, escape_field_value(&self.value))
    }
}

/// A parsed field selector: the AND of its terms. Empty matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses a `fieldSelector` query value (`f=v`, `f==v`, `f!=v`, comma-separated, with `\,`
    /// `\=` `\\` escapes in values); errors are `400 BadRequest` with upstream's message.
    pub fn parse(selector: &str) -> Result<Self, ApiError> {
        Self::parse_str(selector).map_err(ApiError::bad_request)
    }

    /// Like [`FieldSelector::parse`], returning upstream's bare error text.
    pub fn parse_str(selector: &str) -> Result<Self, String> {
        let mut parts = split_terms(selector);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                ));
            };
            let value = unescape_field_value(rhs)?;
            terms.push(FieldTerm {
                field: lhs.to_string(),
                value,
                not_equal: op == "!=",
            });
        }
        Ok(Self { terms })
    }

    /// True when the selector has no term.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms, in upstream's (sorted) order.
    #[cfg(test)]
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// The fields the selector reads, in order, so the server can reject unsupported ones with
    /// [`unsupported_field`].
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// Checks every field against the kind's supported list, answering upstream's 400 for the
    /// first unsupported one.
    #[cfg(test)]
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), ApiError> {
        match self.fields().find(|f| !supported.contains(f)) {
            Some(field) => Err(unsupported_field(field)),
            None => Ok(()),
        }
    }

    /// The value a `field=v` term pins `field` to, if any.
    #[cfg(test)]
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && !t.not_equal)
            .map(|t| t.value.as_str())
    }

    /// Whether an object matches; `get` returns the object's value of a field (e.g.
    /// `metadata.name`), `None` reading as the empty string.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.terms
            .iter()
            .all(|t| t.matches(get(&t.field).as_deref()))
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = ApiError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Upstream's 400 for a field selector naming a field the resource does not index:
/// `field label not supported: <field>`.
pub fn unsupported_field(field: &str) -> ApiError {
    ApiError::bad_request(format!("field label not supported: {field}"))
}

/// Reads a dotted path (`spec.nodeName`, `status.phase`, `metadata.namespace`) from an object and
/// renders a scalar as a field selector compares it: strings as-is, booleans `true`/`false`,
/// numbers in JSON form. Missing fields, `null`, objects and arrays give `None`.
pub fn json_field(obj: &Value, dotted: &str) -> Option<String> {
    let mut cur = obj;
    for part in dotted.split('.') {
        cur = cur.as_object()?.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// Escapes a literal value for use in a field selector (`\` `,` `=`), as upstream's `EscapeValue`.
pub fn escape_field_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Splits on unescaped commas, keeping escapes in the terms.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits a term at the first operator (`!=`, `==`, `=`, tried in that order at each position).
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], op, value));
            }
        }
    }
    None
}

/// Upstream's `UnescapeValue`, with its error messages.
fn unescape_field_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                other => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    ));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Upstream prints the rune with %v, i.e. its code point number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            other => out.push(other),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn parse_ok(s: &str) -> LabelSelector {
        match LabelSelector::parse_str(s) {
            Ok(sel) => sel,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    fn parse_err(s: &str) -> String {
        match LabelSelector::parse_str(s) {
            Ok(sel) => panic!("{s:?} should not parse, got {sel}"),
            Err(e) => e,
        }
    }

    #[test]
    fn parses_all_operators() {
        let sel = parse_ok("a=b,c==d,e!=f,g in (x,y),h notin (z),i,!j,k>5,l<7");
        assert_eq!(sel.requirements().len(), 9);
        assert_eq!(
            sel.to_string(),
            "a=b,c==d,e!=f,g in (x,y),h notin (z),i,!j,k>5,l<7"
        );
        let l = labels(json!({"a":"b","c":"d","e":"x","g":"y","h":"q","i":"","k":"6","l":"6"}));
        assert!(sel.matches(Some(&l)));
        let mut l2 = l.clone();
        l2.insert("j".into(), json!("present"));
        assert!(!sel.matches(Some(&l2)));
    }

    #[test]
    fn whitespace_and_sets() {
        let sel = parse_ok("  a in ( x , y ) ,  !b  ");
        assert_eq!(sel.to_string(), "a in (x,y),!b");
        assert!(sel.matches(Some(&labels(json!({"a": "y"})))));
        assert!(!sel.matches(Some(&labels(json!({"a": "y", "b": "1"})))));
        assert!(!sel.matches(Some(&labels(json!({"a": "z"})))));
        assert!(!sel.matches(None));
        // `in` / `notin` are plain identifiers where a value is expected.
        let sel = parse_ok("x in (in,notin)");
        assert!(sel.matches(Some(&labels(json!({"x": "notin"})))));
        // Empty values.
        let sel = parse_ok("a=,b in (,x),c notin ()");
        assert_eq!(sel.to_string(), "a=,b in (,x),c notin ()");
        assert!(sel.matches(Some(&labels(json!({"a": "", "b": ""})))));
        // Keys are sorted, as upstream does.
        assert_eq!(parse_ok("z,a").to_string(), "a,z");
        assert!(parse_ok("").is_everything());
        assert!(parse_ok("   ").matches(None));
    }

    #[test]
    fn negative_requirements_match_missing_labels() {
        let sel = parse_ok("a!=b,c notin (d),!e");
        assert!(sel.matches(None));
        assert!(sel.matches(Some(&Map::new())));
        assert!(!sel.matches(Some(&labels(json!({"a": "b"})))));
    }

    #[test]
    fn parse_errors_match_upstream() {
        assert_eq!(
            parse_err("a in (x"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            parse_err("a in x"),
            "unable to parse requirement: found 'x' expected: '('"
        );
        assert_eq!(
            parse_err("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(parse_err("a,"), "found '', expected: identifier after ','");
        assert_eq!(
            parse_err(",a"),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            parse_err("a=b c"),
            "found 'c', expected: ',' or 'end of string'"
        );
        assert_eq!(
            parse_err("a=(b)"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(
            parse_err("!"),
            "unable to parse requirement: found '', expected: identifier"
        );
        assert_eq!(
            parse_err("a>x"),
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn invalid_keys_and_values() {
        assert_eq!(
            parse_err("-a=b"),
            "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        let e = parse_err("Example.com/a");
        assert!(e.starts_with("unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain"), "{e}");
        let e = parse_err("a/b/c");
        assert!(e.contains("a valid label key must consist of"), "{e}");
        let e = parse_err(&format!("{}=x", "k".repeat(64)));
        assert!(e.contains("name part must be no more than 63 bytes"), "{e}");
        let e = parse_err("/a");
        assert!(e.contains("prefix part must be non-empty"), "{e}");
        assert_eq!(
            parse_err("a=-x"),
            "unable to parse requirement: values[0][a]: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        let e = parse_err(&format!("a={}", "v".repeat(64)));
        assert!(e.contains("must be no more than 63 bytes"), "{e}");
        // Prefixed keys are fine.
        let sel = parse_ok("app.kubernetes.io/name=web");
        assert!(sel.matches(Some(&labels(json!({"app.kubernetes.io/name": "web"})))));
        assert_eq!(
            sel.requires_exact_match("app.kubernetes.io/name"),
            Some("web")
        );
        // The API error is a 400.
        let err = LabelSelector::parse("a in (").err();
        assert_eq!(err.map(|e| e.code), Some(400));
    }

    #[test]
    fn label_selector_json() {
        let sel = from_label_selector_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "team", "operator": "Exists"}
            ]
        }));
        let sel = match sel {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert!(sel.matches(Some(&labels(json!({"app":"web","tier":"fe","team":"a"})))));
        assert!(!sel.matches(Some(&labels(json!({"app":"web","tier":"fe"})))));
        assert!(!sel.matches(Some(&labels(
            json!({"app":"web","tier":"fe","team":"a","canary":"1"})
        ))));
        assert!(!sel.matches(Some(&labels(
            json!({"app":"web","tier":"fe","team":"a","env":"prod"})
        ))));

        let everything = from_label_selector_json(&json!({}));
        assert!(everything.as_ref().is_ok_and(|s| s.matches(None)));
        let nothing = from_label_selector_json(&Value::Null);
        assert!(
            nothing
                .as_ref()
                .is_ok_and(|s| !s.matches(Some(&Map::new())))
        );

        assert_eq!(
            from_label_selector_json(&json!({"matchExpressions":[{"key":"a","operator":"Foo"}]}))
                .err(),
            Some("\"Foo\" is not a valid label selector operator".to_string())
        );
        assert_eq!(
            from_label_selector_json(&json!({"matchExpressions":[{"key":"a","operator":"In","values":[]}]})).err(),
            Some("values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty".to_string())
        );
        assert_eq!(
            from_label_selector_json(&json!({"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]})).err(),
            Some("values: Invalid value: [\"x\"]: values set must be empty for exists and does not exist".to_string())
        );
        let e = from_label_selector_json(&json!({"matchLabels":{"-bad":"x"}})).err();
        assert!(e.is_some_and(|e| e.starts_with("key: Invalid value: \"-bad\": name part")));
    }

    #[test]
    fn field_selector_basics() {
        let sel = match FieldSelector::parse_str("metadata.name=web,status.phase!=Failed") {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            sel.fields().collect::<Vec<_>>(),
            vec!["metadata.name", "status.phase"]
        );
        let pod = json!({"metadata": {"name": "web"}, "status": {"phase": "Running"}});
        assert!(sel.matches(|f| json_field(&pod, f)));
        let failed = json!({"metadata": {"name": "web"}, "status": {"phase": "Failed"}});
        assert!(!sel.matches(|f| json_field(&failed, f)));
        // `==` is `=`; a missing field reads as "".
        let sel = FieldSelector::parse_str("spec.nodeName==").unwrap_or_default();
        assert!(sel.matches(|f| json_field(&pod, f)));
        assert_eq!(sel.requires_exact_match("spec.nodeName"), Some(""));
        assert!(FieldSelector::parse_str("").is_ok_and(|s| s.is_empty()));
        assert!(FieldSelector::parse_str(",,").is_ok_and(|s| s.is_empty()));
    }

    #[test]
    fn field_selector_escaping() {
        let sel = FieldSelector::parse_str(r"metadata.name=a\,b\=c\\d,x=y").unwrap_or_default();
        assert_eq!(sel.terms().len(), 2);
        assert_eq!(sel.terms()[0].value, r"a,b=c\d");
        assert_eq!(sel.to_string(), r"metadata.name=a\,b\=c\\d,x=y");
        assert_eq!(
            FieldSelector::parse_str(r"a=b\x").err(),
            Some(r"invalid field selector: invalid escape sequence: \x".to_string())
        );
        assert_eq!(
            FieldSelector::parse_str(r"a=b\").err(),
            Some(r"invalid field selector: invalid escape sequence: \".to_string())
        );
        assert_eq!(
            FieldSelector::parse_str("a=b=c").err(),
            Some("invalid field selector: unescaped character in value: 61".to_string())
        );
        assert_eq!(
            FieldSelector::parse_str("a,b=c").err(),
            Some("invalid selector: 'a,b=c'; can't understand 'a'".to_string())
        );
        assert_eq!(escape_field_value("a,b=c\\"), r"a\,b\=c\\");
    }

    #[test]
    fn unsupported_fields() {
        let sel = FieldSelector::parse_str("spec.bogus=1,metadata.name=x").unwrap_or_default();
        let err = sel
            .check_supported(&["metadata.name", "metadata.namespace"])
            .err();
        let err = err.map(|e| (e.code, e.message));
        assert_eq!(
            err,
            Some((400, "field label not supported: spec.bogus".to_string()))
        );
    }

    #[test]
    fn json_field_renders_scalars() {
        let obj = json!({"spec": {"unschedulable": true, "replicas": 3, "n": null, "m": {}}});
        assert_eq!(
            json_field(&obj, "spec.unschedulable").as_deref(),
            Some("true")
        );
        assert_eq!(json_field(&obj, "spec.replicas").as_deref(), Some("3"));
        assert_eq!(json_field(&obj, "spec.n"), None);
        assert_eq!(json_field(&obj, "spec.m"), None);
        assert_eq!(json_field(&obj, "spec.missing.deeper"), None);
    }
}
