//! Compiling CEL rules: the environment, input limits that keep the parser safe, and a cache.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::{Env, Program};

use super::cost::{self, Shape};

/// The longest rule or message expression accepted, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 32 * 1024;
/// The deepest nesting of parentheses, brackets, braces and unary operators in the source.
const MAX_SOURCE_NESTING: usize = 64;
/// The deepest expression tree accepted (upstream's parser recursion limit is 250).
const MAX_AST_DEPTH: usize = 250;
/// Stack for the parser thread: the generated parser recurses once per nesting level.
const PARSER_STACK: usize = 64 * 1024 * 1024;
/// Compiled programs kept; the cache is emptied when it fills up.
const CACHE_ENTRIES: usize = 4096;

/// The CEL environment rules run in: the standard library, the string extension library, the
/// Kubernetes libraries and the cel-go extensions Kubernetes enables (lists, `cel.bind`,
/// two-variable comprehensions, the optional library's list functions: [`super::library`]).
pub fn env() -> &'static Arc<Env> {
    static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
        let mut env = Env::stdlib();
        // Registering a built-in extension into a fresh standard environment cannot clash.
        let _ = env.add_extension(cel::extensions::strings);
        // The libraries declare disjoint overloads of their own: registering cannot clash.
        let _ = super::library::register(&mut env);
        Arc::new(env)
    });
    &ENV
}

/// A compiled expression and what it refers to.
#[derive(Debug)]
pub struct Compiled {
    /// The program.
    pub program: Program,
    /// Whether it reads `oldSelf` (a transition rule).
    pub uses_old_self: bool,
}

/// Why an expression does not compile; the text follows cel-go's `ERROR: <input>:…` style.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CompileError(pub String);

/// Compiled programs by source text, kept per server (on its [`Registry`]): what one server's
/// CRDs compiled is never seen by another server in the same process.
#[derive(Default)]
pub struct CelCache {
    entries: Mutex<HashMap<String, Arc<Compiled>>>,
}

impl std::fmt::Debug for CelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CelCache")
    }
}

impl CelCache {
    /// Compiled programs held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Compiles `source` (or takes it from the cache). Every identifier and function must be
    /// known to the cost model, so the compiled program can always be bounded before it runs.
    pub fn compile(&self, source: &str) -> Result<Arc<Compiled>, CompileError> {
        if let Some(hit) = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(source)
        {
            return Ok(hit.clone());
        }
        let compiled = Arc::new(compile_uncached(source)?);
        let mut cache = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(source.to_string(), compiled.clone());
        Ok(compiled)
    }
}

/// Parses `source` in `env` (its macros) with the limits every expression has: its length,
/// its nesting, and the depth of its tree; the parser runs on a thread with a generous stack.
/// Literal `matches` patterns are checked, and list and map literals whose elements' types
/// show in the source must agree (reported as cel-go's checker does, with the position),
/// for callers that do not type-check. Nothing is checked of the references: the caller
/// type-checks the program against its variables ([`super::check`]) and bounds its cost.
pub fn parse_in(env: &Arc<Env>, source: &str) -> Result<Program, CompileError> {
    parse_with(env, source, true)
}

/// [`parse_in`], checking literal aggregates only when `literals` (the type checker, which
/// runs on every CRD rule, reports them itself, with every other issue).
pub(crate) fn parse_with(
    env: &Arc<Env>,
    source: &str,
    literals: bool,
) -> Result<Program, CompileError> {
    if source.len() > MAX_EXPRESSION_BYTES {
        return Err(CompileError(format!(
            "expression of {} bytes exceeds the limit of {MAX_EXPRESSION_BYTES} bytes",
            source.len()
        )));
    }
    let nesting = source_nesting(source);
    if nesting > MAX_SOURCE_NESTING {
        return Err(CompileError(format!(
            "ERROR: <input>: expression nesting of {nesting} exceeds the limit of {MAX_SOURCE_NESTING}"
        )));
    }
    let owned = source.to_string();
    let env = env.clone();
    // The parser recurses per nesting level and per chained operator: run it on a thread with a
    // generous stack, and drop over-deep trees there too (dropping recurses as well).
    let handle = std::thread::Builder::new()
        .name("cel-compile".into())
        .stack_size(PARSER_STACK)
        .spawn(move || -> Result<Program, CompileError> {
            let program = env
                .compile(&owned)
                .map_err(|e| CompileError(e.to_string()))?;
            let depth = ast_depth(program.expression());
            if depth > MAX_AST_DEPTH {
                return Err(CompileError(format!(
                    "ERROR: <input>: expression recursion depth {depth} exceeds the limit of {MAX_AST_DEPTH}"
                )));
            }
            check_regex_literals(program.expression())?;
            if literals {
                check_homogeneous_literals(&program, &owned)?;
            }
            Ok(program)
        })
        .map_err(|e| CompileError(format!("starting the compiler: {e}")))?;
    handle
        .join()
        .map_err(|_| CompileError("the compiler failed".into()))?
}

fn compile_uncached(source: &str) -> Result<Compiled, CompileError> {
    let program = parse_with(env(), source, false)?;
    // Every reference must be known to the cost model: probe it with placeholder shapes.
    let probe = [("self", Shape::opaque(1)), ("oldSelf", Shape::opaque(1))];
    if let Err(e) = cost::estimate(program.expression(), &probe) {
        return Err(CompileError(format!("ERROR: <input>: {e}")));
    }
    let uses_old_self = program.references().has_variable("oldSelf");
    Ok(Compiled {
        program,
        uses_old_self,
    })
}

/// The deepest nesting of brackets and prefix operators in the source text (outside strings).
fn source_nesting(source: &str) -> usize {
    let mut depth = 0usize;
    let mut max = 0usize;
    let mut unary_run = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in source.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => {
                depth += 1;
                max = max.max(depth + unary_run);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '!' | '-' => {
                unary_run += 1;
                max = max.max(depth + unary_run);
                continue;
            }
            c if c.is_whitespace() => continue,
            _ => {}
        }
        unary_run = 0;
    }
    max
}

/// The sub-expressions of `e`, in no particular order.
fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    let mut out = Vec::new();
    match &e.expr {
        Expr::Call(c) => {
            out.extend(c.target.as_deref());
            out.extend(c.args.iter());
        }
        Expr::Comprehension(c) => out.extend([
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]),
        Expr::List(l) => out.extend(l.elements.iter()),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    out.push(&me.key);
                    out.push(&me.value);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                match &entry.expr {
                    EntryExpr::MapEntry(me) => {
                        out.push(&me.key);
                        out.push(&me.value);
                    }
                    EntryExpr::StructField(f) => out.push(&f.value),
                }
            }
        }
        Expr::Select(s) => out.push(&s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    out
}

/// Refuses a `matches` call whose first argument is a string literal that is not a regular
/// expression, as cel-go's `ValidateRegexLiterals` (Kubernetes enables it since 1.29).
fn check_regex_literals(root: &IdedExpr) -> Result<(), CompileError> {
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if let Expr::Call(c) = &e.expr
            && c.func_name == "matches"
            && let Some(IdedExpr {
                expr: Expr::Literal(LiteralValue::String(pattern)),
                ..
            }) = c.args.first()
            && regex::Regex::new(pattern.inner()).is_err()
        {
            return Err(CompileError(
                "ERROR: <input>: invalid matches argument".to_string(),
            ));
        }
        stack.extend(children(e));
    }
    Ok(())
}

/// The CEL type of an expression whose type shows in the source: a literal, or a list or map
/// construction of such with one element type; `None` when it depends on anything else.
fn literal_cel_type(e: &IdedExpr, depth: usize) -> Option<String> {
    if depth > MAX_AST_DEPTH {
        return None;
    }
    Some(match &e.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => "bool".into(),
        Expr::Literal(LiteralValue::Bytes(_)) => "bytes".into(),
        Expr::Literal(LiteralValue::Double(_)) => "double".into(),
        Expr::Literal(LiteralValue::Int(_)) => "int".into(),
        Expr::Literal(LiteralValue::Null) => "null_type".into(),
        Expr::Literal(LiteralValue::String(_)) => "string".into(),
        Expr::Literal(LiteralValue::UInt(_)) => "uint".into(),
        Expr::List(l) if l.optional_indices.is_empty() => {
            let t = one_type(l.elements.iter().map(|x| literal_cel_type(x, depth + 1)))?;
            format!("list({t})")
        }
        Expr::Map(m) => {
            let mut keys = Vec::new();
            let mut values = Vec::new();
            for entry in &m.entries {
                match &entry.expr {
                    EntryExpr::MapEntry(me) if !me.optional => {
                        keys.push(literal_cel_type(&me.key, depth + 1));
                        values.push(literal_cel_type(&me.value, depth + 1));
                    }
                    _ => return None,
                }
            }
            let k = one_type(keys.into_iter())?;
            let v = one_type(values.into_iter())?;
            format!("map({k}, {v})")
        }
        _ => return None,
    })
}

/// The one type all of `types` are, if each is known and they agree (none when empty).
fn one_type(mut types: impl Iterator<Item = Option<String>>) -> Option<String> {
    let first = types.next()??;
    for t in types {
        if t? != first {
            return None;
        }
    }
    Some(first)
}

/// The first element whose type differs from the first one's, with both types, when every
/// type is known.
fn mismatch<'a>(elements: &[&'a IdedExpr]) -> Option<(&'a IdedExpr, String, String)> {
    let mut types = Vec::with_capacity(elements.len());
    for e in elements {
        types.push(literal_cel_type(e, 0)?);
    }
    let first = types.first()?;
    let (i, found) = types.iter().enumerate().find(|(_, t)| *t != first)?;
    Some((elements.get(i)?, first.clone(), found.clone()))
}

/// Refuses list and map literals whose elements (keys, values) are of different types, as
/// cel-go's checker does with `HomogeneousAggregateLiterals` (always enabled by Kubernetes),
/// with its message at the first differing element. Only types the source shows are
/// compared: an element whose type depends on a variable could be `dyn`, which upstream
/// accepts beside anything.
fn check_homogeneous_literals(program: &Program, source: &str) -> Result<(), CompileError> {
    let refuse = |(at, expected, found): (&IdedExpr, String, String)| {
        CompileError(super::check::render_issue(
            program,
            source,
            at.id,
            &format!("expected type '{expected}' but found '{found}'"),
        ))
    };
    let mut stack = vec![program.expression()];
    while let Some(e) = stack.pop() {
        match &e.expr {
            Expr::List(l) if l.optional_indices.is_empty() => {
                let elements: Vec<&IdedExpr> = l.elements.iter().collect();
                if let Some(m) = mismatch(&elements) {
                    return Err(refuse(m));
                }
            }
            Expr::Map(m) => {
                let entries: Vec<_> = m
                    .entries
                    .iter()
                    .filter_map(|entry| match &entry.expr {
                        EntryExpr::MapEntry(me) if !me.optional => Some(me),
                        _ => None,
                    })
                    .collect();
                if entries.len() == m.entries.len() {
                    let keys: Vec<&IdedExpr> = entries.iter().map(|me| &me.key).collect();
                    let values: Vec<&IdedExpr> = entries.iter().map(|me| &me.value).collect();
                    if let Some(m) = mismatch(&keys).or_else(|| mismatch(&values)) {
                        return Err(refuse(m));
                    }
                }
            }
            _ => {}
        }
        stack.extend(children(e));
    }
    Ok(())
}

/// The depth of an expression tree, computed without recursion.
fn ast_depth(root: &IdedExpr) -> usize {
    let mut max = 0;
    let mut stack: Vec<(&IdedExpr, usize)> = vec![(root, 1)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        stack.extend(children(e).into_iter().map(|c| (c, d + 1)));
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles through a fresh cache.
    fn compile(source: &str) -> Result<Arc<Compiled>, CompileError> {
        CelCache::default().compile(source)
    }

    #[test]
    fn compiles_and_caches() {
        let cache = CelCache::default();
        let a = cache
            .compile("self.x > 1 && oldSelf.x <= self.x")
            .expect("compiles");
        assert!(a.uses_old_self);
        let b = cache
            .compile("self.x > 1 && oldSelf.x <= self.x")
            .expect("compiles");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.len(), 1);
        // Another cache (another server) compiles its own.
        let other = CelCache::default();
        let c = other
            .compile("self.x > 1 && oldSelf.x <= self.x")
            .expect("compiles");
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(!compile("self.x > 1").expect("compiles").uses_old_self);
    }

    #[test]
    fn syntax_errors_name_the_position() {
        let e = compile("self.x <").expect_err("syntax error");
        assert!(e.0.contains("<input>:1:9"), "{e}");
    }

    #[test]
    fn hostile_sources_are_refused_without_crashing() {
        let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(compile(&deep).is_err());
        let nots = format!("{}true", "!".repeat(5000));
        assert!(compile(&nots).is_err());
        let long_chain = vec!["1"; 2000].join(" + ");
        let e = compile(&long_chain).expect_err("too deep");
        assert!(e.0.contains("recursion depth"), "{e}");
        assert!(compile(&"a".repeat(MAX_EXPRESSION_BYTES + 1)).is_err());
        // Brackets inside strings are not nesting.
        assert!(compile(&format!("self == '{}'", "(".repeat(200))).is_ok());
    }

    #[test]
    fn kubernetes_libraries_compile_and_are_bounded() {
        for rule in [
            "isIP(self) && ip(self).family() == 4 && cidr('10.0.0.0/8').containsIP(self)",
            "isURL(self) && url(self).getHostname() != '' && url(self).getQuery().size() >= 0",
            "quantity(self).compareTo(quantity('40Gi')) >= 0 && sign(quantity(self)) == 1",
            "[1, 2].isSorted() && [1, 2].sum() == 3 && self.find('[0-9]+') != ''",
            "sets.contains([1, 2], [1]) && !format.dns1123Label().validate(self).hasValue()",
            "semver(self).isGreaterThan(semver('1.0.0')) && type(ip(self)) == net.IP",
            "format.named('uri').hasValue() && self.findAll('a', 2).size() <= 2",
        ] {
            compile(rule).unwrap_or_else(|e| panic!("{rule}: {e}"));
        }
    }

    #[test]
    fn regex_literals_are_checked() {
        let e = compile("self.matches('[a-z')").expect_err("bad pattern");
        assert_eq!(e.0, "ERROR: <input>: invalid matches argument");
        assert!(compile("self.matches('^[a-z]+$')").is_ok());
        // A pattern only known at evaluation is checked then.
        assert!(compile("self.matches(self)").is_ok());
    }

    /// `parse_in` (for callers that do not type-check) refuses mixed literals with cel-go's
    /// message, position and caret; CRD rules leave them to the type checker.
    #[test]
    fn aggregate_literals_are_homogeneous() {
        for (source, at, expected, found) in [
            ("[1, 'a'] == []", 5, "int", "string"),
            ("[1, 2.0].size() == 2", 5, "int", "double"),
            ("[[1], ['a']].size() == 2", 7, "list(int)", "list(string)"),
            ("{'a': 1, 'b': 'x'}.size() == 2", 15, "int", "string"),
            ("{'a': 1, 2: 1}.size() == 2", 10, "string", "int"),
        ] {
            let e = parse_in(env(), source).expect_err(source);
            assert_eq!(
                e.0,
                format!(
                    "ERROR: <input>:1:{at}: expected type '{expected}' but found '{found}'\n | {source}\n | {}^",
                    ".".repeat(at - 1)
                ),
                "{source}"
            );
            assert!(compile(source).is_ok(), "{source}");
        }
        // Elements whose type depends on a variable, and uniform ones, parse.
        for source in [
            "[self, 'a'].size() == 2",
            "[1, 2, 3].size() == 3",
            "[[1], []].size() == 2",
            "{'a': [1], 'b': [2, 3]}.size() == 2",
        ] {
            parse_in(env(), source).unwrap_or_else(|e| panic!("{source}: {e}"));
        }
    }

    #[test]
    fn unknown_functions_fail_to_compile() {
        let e = compile("self.frobnicate()").expect_err("unknown function");
        assert!(e.0.contains("undeclared reference to 'frobnicate'"), "{e}");
    }
}
