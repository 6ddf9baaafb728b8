//! CEL validation rules of custom resources (`x-kubernetes-validations`).
//!
//! Rules are compiled by the [`cel`] crate (cel-rust): a maintained, pure-Rust CEL parser and
//! interpreter, with the standard macros (`has`, `all`, `exists`, `exists_one`, `map`,
//! `filter`), the standard functions, optional values, the string extension library and the
//! libraries of [`library`] (Kubernetes' own, cel-go's list extension and two-variable
//! comprehensions, as Kubernetes v1.36 enables them). It cannot interrupt a
//! running program, so nothing is evaluated before [`cost`] has bounded its work:
//!
//! * when a CRD is created or updated ([`check_schema`]), every rule and message expression
//!   must compile, transition rules must sit where an old value can be found, `fieldPath` must
//!   name a field of the schema, and the static cost estimate (from `maxItems`, `maxLength`,
//!   `maxProperties`, or what fits in a request where they are absent) must stay within the
//!   per-rule limit and, multiplied by how often the rule runs, within the per-CRD budget;
//! * when a custom resource is written ([`validate`]), each rule's cost is bounded again from
//!   the actual `self`/`oldSelf` before it runs; a rule over the per-call limit is reported as
//!   such, and a request whose rules exceed the per-request budget stops evaluating.
//!
//! Failures are `Invalid` causes at the rule's field path, as kube-apiserver reports them.

pub mod check;
pub mod compile;
pub mod cost;
pub mod library;
pub mod value;

use std::sync::Arc;

use cel::Context;
use serde_json::{Map, Value};

use self::check::Ty;
use self::compile::{CelCache, CompileError, Compiled};
use self::cost::Shape;
use super::names::{child, go_quote, go_render, index, invalid_rendered, key};
use crate::error::Cause;

const VALIDATIONS: &str = "x-kubernetes-validations";

/// The largest estimated cost of one rule in a CRD (upstream `StaticEstimatedCostLimit`).
pub const STATIC_RULE_LIMIT: u64 = 10_000_000;
/// The largest estimated cost of all the rules of a CRD version, each multiplied by the number
/// of times it can run for one object (upstream `StaticEstimatedCRDCostLimit`).
pub const STATIC_CRD_LIMIT: u64 = 100_000_000;
/// The largest bound for evaluating one rule against one value (upstream `PerCallLimit`).
/// Measured: a cost of one million runs in well under a tenth of a second.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The total bound for all rules of one request (upstream `RuntimeCELCostBudget`).
pub const REQUEST_BUDGET: u64 = 10_000_000;

/// One entry of `x-kubernetes-validations`.
#[derive(Debug, Clone, Default)]
struct Rule {
    rule: String,
    message: String,
    message_expression: String,
    field_path: String,
    reason: Option<String>,
    /// `optionalOldSelf`: the rule also runs without an old value, `oldSelf` being an optional.
    optional_old_self: Option<bool>,
}

impl Rule {
    fn from_json(v: &Value) -> Self {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Rule {
            rule: s("rule"),
            message: s("message"),
            message_expression: s("messageExpression"),
            field_path: s("fieldPath"),
            reason: v.get("reason").and_then(Value::as_str).map(str::to_string),
            optional_old_self: v.get("optionalOldSelf").and_then(Value::as_bool),
        }
    }

    /// Whether `oldSelf` is an optional, and the rule runs when there is no old value.
    fn old_self_is_optional(&self) -> bool {
        self.optional_old_self == Some(true)
    }

    /// Upstream's default message: the message, or `failed rule: <rule>`.
    fn error_string(&self) -> String {
        if self.message.trim().is_empty() {
            format!("failed rule: {}", self.rule.trim())
        } else {
            self.message.trim().to_string()
        }
    }

    /// The rule as Go's `%v` prints an `apiextensions.ValidationRule`.
    fn render(&self) -> String {
        let reason = match &self.reason {
            Some(r) => format!("\"{r}\""),
            None => "(*apiextensions.FieldValueErrorReason)(nil)".to_string(),
        };
        // Go prints a set pointer as its address; the value is what can be shown here.
        let optional_old_self = match self.optional_old_self {
            Some(b) => format!("(*bool)({b})"),
            None => "(*bool)(nil)".to_string(),
        };
        format!(
            "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional_old_self}}}",
            go_quote(&self.rule),
            go_quote(&self.message),
            go_quote(&self.message_expression),
            go_quote(&self.field_path),
        )
    }
}

fn rules_of(schema: &Value) -> Vec<Rule> {
    schema
        .get(VALIDATIONS)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Rule::from_json).collect())
        .unwrap_or_default()
}

// =============================================================================================
// CRD time
// =============================================================================================

/// Checks the rules of a CRD version's `openAPIV3Schema` at field path `path` (e.g.
/// `spec.versions[0].schema.openAPIV3Schema`): compilation, transition-rule placement,
/// `fieldPath`, and the static cost limits. Returns upstream-style causes.
pub fn check_schema(schema: &Value, path: &str) -> Vec<Cause> {
    check_schema_with(schema, path, &CelCache::default())
}

/// [`check_schema`] with a server's compile cache.
pub fn check_schema_with(schema: &Value, path: &str, cache: &CelCache) -> Vec<Cause> {
    let mut check = SchemaCheck {
        out: Vec::new(),
        total: 0,
        cache,
    };
    check.node(schema, path, 1, true, 0);
    if check.total > STATIC_CRD_LIMIT {
        check.out.push(Cause::forbidden(
            path,
            &format!(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of {}",
                factor(check.total, STATIC_CRD_LIMIT)
            ),
        ));
    }
    check.out
}

/// A schema node whose rules are checked: its schema, its shape and the type of `self`.
struct Node<'a> {
    schema: &'a Value,
    shape: &'a Shape,
    ty: &'a Ty,
}

struct SchemaCheck<'a> {
    out: Vec<Cause>,
    total: u64,
    cache: &'a CelCache,
}

/// How many times over the limit a cost is, as upstream prints it (`2.5x`).
fn factor(cost: u64, limit: u64) -> String {
    format!("{:.1}x", cost as f64 / limit as f64)
}

impl SchemaCheck<'_> {
    /// `cardinality`: how many times a rule at this node can run for one object.
    fn node(&mut self, s: &Value, p: &str, cardinality: u64, correlatable: bool, depth: usize) {
        if depth > 128 || !s.is_object() {
            return;
        }
        let rules = rules_of(s);
        if !rules.is_empty() {
            let shape = Shape::of_schema(s);
            // The root of the resource, or of an embedded one, has its type and metadata.
            let resource_root = depth == 0
                || s.get("x-kubernetes-embedded-resource")
                    .and_then(Value::as_bool)
                    == Some(true);
            let ty = check::schema::self_type(s, resource_root);
            for (i, rule) in rules.iter().enumerate() {
                let rp = index(&child(p, VALIDATIONS), i);
                let node = Node {
                    schema: s,
                    shape: &shape,
                    ty: &ty,
                };
                self.rule(&node, rule, &rp, cardinality, correlatable);
            }
        }
        let shape_len = |sub: &Value| Shape::of_schema(sub).len.max(1);
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                self.node(
                    sub,
                    &key(&child(p, "properties"), name),
                    cardinality,
                    correlatable,
                    depth + 1,
                );
            }
        }
        if let Some(items) = s.get("items").filter(|i| i.is_object()) {
            let is_map_list =
                s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
            let n = shape_len(s);
            self.node(
                items,
                &child(p, "items"),
                cardinality.saturating_mul(n),
                correlatable && is_map_list,
                depth + 1,
            );
        }
        if let Some(add) = s.get("additionalProperties").filter(|a| a.is_object()) {
            let n = shape_len(s);
            self.node(
                add,
                &child(p, "additionalProperties"),
                cardinality.saturating_mul(n),
                correlatable,
                depth + 1,
            );
        }
    }

    fn rule(
        &mut self,
        node: &Node<'_>,
        rule: &Rule,
        rp: &str,
        cardinality: u64,
        correlatable: bool,
    ) {
        let (s, shape) = (node.schema, node.shape);
        if rule.rule.trim().is_empty() {
            // Reported by the structural checks ("rule is not specified").
            return;
        }
        let rule_path = child(rp, "rule");
        let old_self_ty = if rule.old_self_is_optional() {
            Ty::optional(node.ty.clone())
        } else {
            node.ty.clone()
        };
        let vars = [("self", node.ty.clone()), ("oldSelf", old_self_ty)];
        match self.cache.compile(&rule.rule) {
            Err(e) => self.out.push(invalid_rendered(
                &rule_path,
                &rule.render(),
                &format!("compilation failed: {e}"),
            )),
            Ok(compiled) => match check::check_typed(&compiled.program, &rule.rule, &vars) {
                Err(e) => self.out.push(invalid_rendered(
                    &rule_path,
                    &rule.render(),
                    &format!("compilation failed: {e}"),
                )),
                // Exactly `bool`, as upstream compares the checked output type: a `dyn` rule
                // (`self.intOrString`) is refused too.
                Ok((ty, _)) if ty != Ty::Bool => self.out.push(invalid_rendered(
                    &rule_path,
                    &rule.render(),
                    "cel expression must evaluate to a bool",
                )),
                Ok((_, types)) => self.compiled_rule(
                    &compiled,
                    &types,
                    rule,
                    &rule_path,
                    shape,
                    cardinality,
                    correlatable,
                ),
            },
        }
        if !rule.message_expression.trim().is_empty() {
            let mp = child(rp, "messageExpression");
            let checked = self.cache.compile(&rule.message_expression).and_then(|c| {
                check::check_typed(&c.program, &rule.message_expression, &vars)
                    .map(|typed| (c, typed))
                    .map_err(CompileError)
            });
            match checked {
                Err(e) => self.out.push(invalid_rendered(
                    &mp,
                    &rule.render(),
                    &format!("messageExpression compilation failed: {e}"),
                )),
                // Exactly `string` (a `dyn` message expression is refused, as upstream).
                Ok((_, (ty, _))) if ty != Ty::Str => self.out.push(invalid_rendered(
                    &mp,
                    &rule.render(),
                    "messageExpression must evaluate to a string",
                )),
                Ok((compiled, (_, types))) => {
                    let vars = [("self", shape.clone()), ("oldSelf", shape.clone())];
                    if let Ok(c) =
                        cost::estimate_typed(compiled.program.expression(), &vars, &types)
                        && c > STATIC_RULE_LIMIT
                    {
                        self.out.push(Cause::forbidden(
                            &mp,
                            &format!(
                                "estimated messageExpression cost exceeds budget by factor of {} (try simplifying the messageExpression, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
                                factor(c, STATIC_RULE_LIMIT)
                            ),
                        ));
                    }
                }
            }
        }
        if !rule.field_path.is_empty() && resolve_field_path(s, &rule.field_path).is_none() {
            self.out.push(invalid_rendered(
                &child(rp, "fieldPath"),
                &go_quote(&rule.field_path),
                "fieldPath must be a valid path",
            ));
        }
    }

    /// The checks of a rule that compiled (with the checker's `types` of its expressions):
    /// transition-rule placement and its cost.
    #[allow(clippy::too_many_arguments)]
    fn compiled_rule(
        &mut self,
        compiled: &Compiled,
        types: &check::Types,
        rule: &Rule,
        rule_path: &str,
        shape: &Shape,
        cardinality: u64,
        correlatable: bool,
    ) {
        if compiled.uses_old_self && !correlatable {
            self.out.push(invalid_rendered(
                rule_path,
                &go_quote(&rule.rule),
                "oldSelf cannot be used on the uncorrelatable portion of the schema",
            ));
        }
        if let (false, Some(set)) = (compiled.uses_old_self, rule.optional_old_self) {
            let parent = rule_path.strip_suffix(".rule").unwrap_or(rule_path);
            self.out.push(invalid_rendered(
                &child(parent, "optionalOldSelf"),
                &set.to_string(),
                "may not be set if oldSelf is not used in rule",
            ));
        }
        let vars = [("self", shape.clone()), ("oldSelf", shape.clone())];
        match cost::estimate_typed(compiled.program.expression(), &vars, types) {
            Ok(c) if c > STATIC_RULE_LIMIT => self.out.push(Cause::forbidden(
                rule_path,
                &format!(
                    "estimated rule cost exceeds budget by factor of {} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
                    factor(c, STATIC_RULE_LIMIT)
                ),
            )),
            Ok(c) => self.total = self.total.saturating_add(c.saturating_mul(cardinality)),
            Err(e) => self.out.push(invalid_rendered(
                rule_path,
                &rule.render(),
                &format!("compilation failed: ERROR: <input>: {e}"),
            )),
        }
    }
}

/// Resolves a rule's `fieldPath` (`.spec.x`, `.map['key']`, `.list[0]`) against `schema`;
/// answers the field path suffix in `field.Path` form (`spec.x`, `map[key]`, `list[0]`).
fn resolve_field_path(schema: &Value, field_path: &str) -> Option<String> {
    let mut rest = field_path;
    let mut s = schema;
    let mut out = String::new();
    if !rest.starts_with('.') && !rest.starts_with('[') {
        return None;
    }
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return None;
            }
            s = schema_child(s, name)?;
            out = child(&out, name);
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            let name = &after[..end];
            s = schema_child(s, name)?;
            out = key(&out, name);
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let i: usize = after[..end].parse().ok()?;
            s = s.get("items")?;
            out = index(&out, i);
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

fn schema_child<'a>(s: &'a Value, name: &str) -> Option<&'a Value> {
    s.get("properties")
        .and_then(|p| p.get(name))
        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
}

// =============================================================================================
// Write time
// =============================================================================================

/// Evaluates the rules of `schema` against a custom resource `obj` (the object root), with
/// `old` the stored object on updates (transition rules run only where an old value exists).
/// Returns upstream-style causes; empty when every rule holds.
pub fn validate(obj: &Value, old: Option<&Value>, schema: &Value) -> Vec<Cause> {
    validate_with(obj, old, schema, &CelCache::default())
}

/// [`validate`] with a server's compile cache.
pub fn validate_with(
    obj: &Value,
    old: Option<&Value>,
    schema: &Value,
    cache: &CelCache,
) -> Vec<Cause> {
    validate_ratcheted(obj, old, schema, cache).0
}

/// [`validate_with`] answering beside the causes the warnings of ratcheted failures: on an
/// update, a rule that does not read `oldSelf` and fails on a value unchanged since `old`
/// (correlated as for transition rules) is not enforced but reported as a warning
/// (`spec.x: Invalid value: ...`), as upstream's CRD validation ratcheting does.
pub fn validate_ratcheted(
    obj: &Value,
    old: Option<&Value>,
    schema: &Value,
    cache: &CelCache,
) -> (Vec<Cause>, Vec<String>) {
    let mut run = Run {
        remaining: REQUEST_BUDGET,
        exhausted: false,
        out: Vec::new(),
        ratcheted: Vec::new(),
        cache,
    };
    run.node(schema, obj, old, false, "", 0);
    (run.out, run.ratcheted)
}

/// Whether any rule is declared anywhere in `schema` (so writes can skip the walk).
pub fn has_rules(schema: &Value) -> bool {
    fn rec(s: &Value, depth: usize) -> bool {
        if depth > 128 {
            return false;
        }
        if s.get(VALIDATIONS)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            return true;
        }
        s.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.values().any(|v| rec(v, depth + 1)))
            || s.get("items").is_some_and(|i| rec(i, depth + 1))
            || s.get("additionalProperties")
                .is_some_and(|a| a.is_object() && rec(a, depth + 1))
    }
    rec(schema, 0)
}

struct Run<'a> {
    remaining: u64,
    exhausted: bool,
    out: Vec<Cause>,
    /// Failures of rules on unchanged values, as warnings.
    ratcheted: Vec<String>,
    cache: &'a CelCache,
}

/// What `self` is at the root: `apiVersion`, `kind`, the rest of the object, and of the
/// metadata only `name` and `generateName` (as upstream).
fn root_view(obj: &Value) -> Value {
    let mut copy = obj.clone();
    if let Some(map) = copy.as_object_mut()
        && let Some(Value::Object(md)) = map.get("metadata")
    {
        let mut kept = Map::new();
        for k in ["name", "generateName"] {
            if let Some(v) = md.get(k) {
                kept.insert(k.to_string(), v.clone());
            }
        }
        map.insert("metadata".into(), Value::Object(kept));
    }
    copy
}

impl Run<'_> {
    /// Evaluates the rules at and below `v`. `old` is its correlated stored value; without
    /// one, `parent_unchanged` says whether the nearest correlated ancestor is unchanged (the
    /// value that decides ratcheting, as upstream's `nearestParentCorrelation`).
    fn node(
        &mut self,
        s: &Value,
        v: &Value,
        old: Option<&Value>,
        parent_unchanged: bool,
        p: &str,
        depth: usize,
    ) {
        if self.exhausted || depth > 128 || v.is_null() || !s.is_object() {
            return;
        }
        // Compared whole (metadata included at the root), as upstream's correlation does.
        let unchanged = match old {
            Some(o) => crate::validation::schema::json_eq(o, v),
            None => parent_unchanged,
        };
        let rules = rules_of(s);
        if !rules.is_empty() {
            let (this, prev) = if depth == 0 {
                (root_view(v), old.map(root_view))
            } else {
                (v.clone(), old.cloned())
            };
            // The root is an object whatever its schema says (upstream's WithTypeAndObjectMeta).
            let type_name = if depth == 0 {
                "object"
            } else {
                s.get("type").and_then(Value::as_str).unwrap_or("")
            };
            self.rules(&rules, s, &this, prev.as_ref(), unchanged, type_name, p);
            if self.exhausted {
                return;
            }
        }
        match v {
            Value::Object(map) => {
                let props = s.get("properties").and_then(Value::as_object);
                let add = s.get("additionalProperties").filter(|a| a.is_object());
                for (k, child_value) in map {
                    if depth == 0 && k == "metadata" {
                        continue;
                    }
                    let old_child = old.and_then(|o| o.get(k));
                    if let Some(sub) = props.and_then(|p| p.get(k)) {
                        self.node(
                            sub,
                            child_value,
                            old_child,
                            unchanged,
                            &child(p, k),
                            depth + 1,
                        );
                    } else if let Some(sub) = add {
                        self.node(
                            sub,
                            child_value,
                            old_child,
                            unchanged,
                            &key(p, k),
                            depth + 1,
                        );
                    }
                }
            }
            Value::Array(items) => {
                let Some(item_schema) = s.get("items") else {
                    return;
                };
                let map_keys: Option<Vec<&str>> =
                    (s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map")).then(
                        || {
                            s.get("x-kubernetes-list-map-keys")
                                .and_then(Value::as_array)
                                .map(|k| k.iter().filter_map(Value::as_str).collect())
                                .unwrap_or_default()
                        },
                    );
                for (i, item) in items.iter().enumerate() {
                    let old_item = match (&map_keys, old.and_then(Value::as_array)) {
                        (Some(keys), Some(old_items)) if !keys.is_empty() => old_items
                            .iter()
                            .find(|o| keys.iter().all(|k| o.get(k) == item.get(k))),
                        _ => None,
                    };
                    self.node(
                        item_schema,
                        item,
                        old_item,
                        unchanged,
                        &index(p, i),
                        depth + 1,
                    );
                    if self.exhausted {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rules(
        &mut self,
        rules: &[Rule],
        schema: &Value,
        this: &Value,
        old: Option<&Value>,
        unchanged: bool,
        type_name: &str,
        p: &str,
    ) {
        let field = if p.is_empty() { "<nil>" } else { p };
        // Errors that are not a rule's verdict name the schema type as their value.
        let typed = go_quote(type_name);
        // A failed rule shows the value, except an object's or a list's.
        let shown = (!matches!(type_name, "object" | "array")).then_some(this);
        let shapes = [
            ("self", Shape::of_json(this)),
            (
                "oldSelf",
                old.map(Shape::of_json).unwrap_or_else(Shape::scalar),
            ),
        ];
        let mut context: Option<Context<'static, 'static>> = None;
        let mut optional_context: Option<Context<'static, 'static>> = None;
        for rule in rules {
            if rule.rule.trim().is_empty() {
                continue;
            }
            let compiled = match self.cache.compile(&rule.rule) {
                Ok(c) => c,
                Err(e) => {
                    self.out.push(invalid_rendered(
                        field,
                        &typed,
                        &format!("rule compile error: {e}"),
                    ));
                    continue;
                }
            };
            let optional_old = rule.old_self_is_optional();
            if compiled.uses_old_self && old.is_none() && !optional_old {
                continue;
            }
            // `optionalOldSelf` rules see `oldSelf` as `optional.of(old)` or `optional.none()`.
            let build = |optional: bool| {
                let mut ctx = Context::with_env(compile::env().clone());
                ctx.add_variable_from_value("self", value::to_cel_in(this, schema));
                let old = old.map(|o| value::to_cel_in(o, schema));
                match (optional, old) {
                    (true, old) => ctx.add_variable_from_value("oldSelf", library::optional(old)),
                    (false, Some(old)) => ctx.add_variable_from_value("oldSelf", old),
                    (false, None) => {}
                }
                ctx
            };
            let slot = if optional_old {
                &mut optional_context
            } else {
                &mut context
            };
            let ctx = slot.get_or_insert_with(|| build(optional_old));
            let cause_field = if rule.field_path.is_empty() {
                field.to_string()
            } else {
                field_with_path(p, &rule.field_path)
            };
            match self.run(&compiled, &shapes, ctx) {
                Err(Stop::Exhausted) => {
                    self.out.push(invalid_rendered(
                        field,
                        &typed,
                        "validation failed due to running out of cost budget, no further validation rules will be run",
                    ));
                    self.exhausted = true;
                    return;
                }
                Err(Stop::OverLimit) => self.out.push(invalid_rendered(
                    field,
                    &typed,
                    &format!("call cost exceeds limit for rule: {}", rule.error_string()),
                )),
                Err(Stop::Unbounded(e)) => self.out.push(invalid_rendered(
                    field,
                    &typed,
                    &format!("{e} evaluating rule: {}", rule.error_string()),
                )),
                Ok(Ok(cel::Value::Bool(true))) => {}
                Ok(Ok(cel::Value::Bool(false))) => {
                    let detail = self.message(rule, &shapes, ctx);
                    let cause = verdict_cause(rule.reason.as_deref(), cause_field, shown, &detail);
                    self.fail(cause, unchanged && !compiled.uses_old_self);
                }
                Ok(Ok(other)) => self.out.push(invalid_rendered(
                    field,
                    &typed,
                    &format!(
                        "rule did not evaluate to a bool but to {:?} evaluating rule: {}",
                        other.type_of().to_string(),
                        rule.error_string()
                    ),
                )),
                Ok(Err(e)) => self.out.push(invalid_rendered(
                    field,
                    &typed,
                    &format!(
                        "{} evaluating rule: {}",
                        library::error_message(&e).unwrap_or_else(|| lower_first(&e.to_string())),
                        rule.error_string()
                    ),
                )),
            }
        }
    }

    /// Records a failed rule: a cause, or under ratcheting a warning.
    fn fail(&mut self, cause: Cause, ratchet: bool) {
        if ratchet {
            self.ratcheted
                .push(format!("{}: {}", cause.field, cause.message));
        } else {
            self.out.push(cause);
        }
    }

    /// Bounds, charges and runs one program.
    fn run(
        &mut self,
        compiled: &Arc<Compiled>,
        shapes: &[(&str, Shape)],
        ctx: &Context<'_, '_>,
    ) -> Result<cel::ResolveResult, Stop> {
        let cost = cost::estimate(compiled.program.expression(), shapes)
            .map_err(|e| Stop::Unbounded(e.to_string()))?;
        if cost > PER_CALL_LIMIT {
            return Err(Stop::OverLimit);
        }
        if cost > self.remaining {
            return Err(Stop::Exhausted);
        }
        self.remaining -= cost;
        Ok(compiled.program.execute(ctx))
    }

    /// The failure message: the message expression's string when it yields a usable one, else
    /// the message, else `failed rule: <rule>`.
    fn message(&mut self, rule: &Rule, shapes: &[(&str, Shape)], ctx: &Context<'_, '_>) -> String {
        if !rule.message_expression.trim().is_empty()
            && let Ok(compiled) = self.cache.compile(&rule.message_expression)
            && let Ok(Ok(cel::Value::String(s))) = self.run(&compiled, shapes, ctx)
            && !s.trim().is_empty()
            && !s.contains('\n')
        {
            return s.trim().to_string();
        }
        rule.error_string()
    }
}

enum Stop {
    Exhausted,
    OverLimit,
    Unbounded(String),
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

fn field_with_path(base: &str, field_path: &str) -> String {
    let mut out = base.to_string();
    let mut rest = field_path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            out = child(&out, &after[..end]);
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']").unwrap_or(after.len());
            out = key(&out, &after[..end]);
            rest = after.get(end + 2..).unwrap_or("");
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').unwrap_or(after.len());
            out = format!("{out}[{}]", &after[..end]);
            rest = after.get(end + 1..).unwrap_or("");
        } else {
            out = child(&out, rest);
            break;
        }
    }
    out
}

/// The cause of a rule that evaluated to false, by its `reason` (upstream's
/// `fieldErrorForReason`): `value` is the checked value, `None` for an object or a list.
fn verdict_cause(
    reason: Option<&str>,
    field: String,
    value: Option<&Value>,
    detail: &str,
) -> Cause {
    match reason {
        Some("FieldValueForbidden") => Cause::forbidden(field, detail),
        Some("FieldValueRequired") => Cause::required(field, detail),
        // `field.Duplicate` carries the value only, not the rule's message.
        Some("FieldValueDuplicate") => Cause::new(
            "FieldValueDuplicate",
            field,
            match value {
                Some(v) => format!("Duplicate value: {}", go_render(v)),
                None => "Duplicate value".to_string(),
            },
        ),
        _ => match value {
            Some(v) => invalid_rendered(&field, &go_render(v), detail),
            None => Cause::new(
                "FieldValueInvalid",
                field,
                format!("Invalid value: {detail}"),
            ),
        },
    }
}

/// Whether `name` is `namespace.field` (a qualified variable such as
/// `authorizer.requestResource`), compared without building the joined name.
pub(crate) fn qualified_name_is(name: &str, namespace: &str, field: &str) -> bool {
    name.strip_prefix(namespace)
        .and_then(|rest| rest.strip_prefix('.'))
        == Some(field)
}

#[cfg(test)]
mod tests;
