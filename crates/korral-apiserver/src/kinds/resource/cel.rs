//! CEL device selectors: upstream's `dynamic-resource-allocation/cel` environment, checked when
//! a DeviceClass, ResourceClaim or ResourceClaimTemplate is written.
//!
//! An expression sees one variable, `device`, of type `kubernetes.DRADevice`: `driver`
//! (string), `attributes` (map of domain to map of attribute name to a value of any type),
//! `capacity` (map of domain to map of capacity name to `kubernetes.Quantity`) and
//! `allowMultipleAllocations` (bool). As upstream's environment is built on Kubernetes' base
//! one, it has the standard library, the string extensions, optional values, `cel.bind` and
//! the Kubernetes libraries (quantity, semver, regex, lists, IPs and CIDRs, URLs, sets,
//! format).
//!
//! [`device_selected`] evaluates a selector against one device for the simulated scheduler's
//! allocator, with the standard library, the string extensions and the Kubernetes libraries
//! ([`crate::validation::cel::library`]): capacities are quantities and version attributes
//! semantic versions. At admission a selector is compiled and checked as
//! upstream does: it must parse, every reference must be declared, the
//! types of operators and functions must fit, the result must be `bool` (or of unknown type),
//! and its estimated cost ([`cost`], bounded by what a device can hold) must stay within
//! `CELSelectorExpressionMaxCost`. The type check is the server's CEL checker
//! ([`crate::validation::cel::check`]), with `device` declared.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use cel::Env;

use crate::validation::cel::check::{self, Ty};
use crate::validation::cel::compile::parse_in;
use crate::validation::cel::cost::{self, Shape};

/// `CELSelectorExpressionMaxCost`: the most an expression may be estimated to cost.
pub(super) const MAX_COST: u64 = 1_000_000;
/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`: entries in each map of a device.
const MAX_DEVICE_ENTRIES: u64 = 32;
/// `DeviceMaxDomainLength`.
const MAX_DOMAIN: u64 = 63;
/// `DeviceMaxIDLength`.
const MAX_ID: u64 = 32;
/// `DeviceAttributeMaxValueLength`.
const MAX_ATTRIBUTE_VALUE: u64 = 64;
/// `DriverNameMaxLength`.
const MAX_DRIVER: u64 = 63;

/// What checking a selector found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Compiles, yields a bool, within the cost limit.
    Valid,
    /// Upstream's `Invalid` detail (`compilation failed: ...` or `must evaluate to bool ...`).
    Invalid(String),
    /// Over `CELSelectorExpressionMaxCost`.
    TooComplex,
}

/// The environment: the one of every expression of the server (the standard library, the
/// string extensions, `cel.bind` and the Kubernetes libraries).
fn env() -> &'static Arc<Env> {
    crate::validation::cel::compile::env()
}

/// The type of `device`: `kubernetes.DRADevice`.
fn device_type() -> Ty {
    let domains = |leaf: Ty| Ty::map(Ty::Str, Ty::map(Ty::Str, leaf));
    let fields = BTreeMap::from([
        ("driver".to_string(), Ty::Str),
        ("attributes".to_string(), domains(Ty::Dyn)),
        (
            "capacity".to_string(),
            domains(Ty::Opaque(
                crate::validation::cel::library::quantity::TYPE_NAME,
            )),
        ),
        ("allowMultipleAllocations".to_string(), Ty::Bool),
    ]);
    Ty::object("kubernetes.DRADevice", fields)
}

/// The CEL value of a device as the allocator describes it: capacities become quantities
/// and tagged version attributes (`{"version": "1.2.3"}`) semantic versions.
fn device_value(device: &serde_json::Value) -> cel::Value {
    use crate::validation::cel::library::{quantity, semver};
    use crate::validation::cel::value::to_cel;
    use cel::objects::{Key, Map};
    let nested = |field: &str, leaf: &dyn Fn(&serde_json::Value) -> cel::Value| {
        let domains: HashMap<Key, cel::Value> = device[field]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(domain, ids)| {
                let ids: HashMap<Key, cel::Value> = ids
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(id, v)| (Key::String(Arc::new(id.clone())), leaf(v)))
                    .collect();
                (
                    Key::String(Arc::new(domain.clone())),
                    cel::Value::Map(Map { map: Arc::new(ids) }),
                )
            })
            .collect();
        cel::Value::Map(Map {
            map: Arc::new(domains),
        })
    };
    let capacity = |v: &serde_json::Value| match v.as_str() {
        Some(s) => quantity::value_of(s).unwrap_or_else(|_| to_cel(v)),
        None => to_cel(v),
    };
    let attribute = |v: &serde_json::Value| match v.get("version").and_then(|s| s.as_str()) {
        Some(s) => semver::value_of(s).unwrap_or_else(|_| cel::Value::String(Arc::new(s.into()))),
        None => to_cel(v),
    };
    let mut entries: HashMap<Key, cel::Value> = HashMap::new();
    entries.insert(
        Key::String(Arc::new("driver".into())),
        to_cel(&device["driver"]),
    );
    entries.insert(
        Key::String(Arc::new("allowMultipleAllocations".into())),
        to_cel(&device["allowMultipleAllocations"]),
    );
    entries.insert(
        Key::String(Arc::new("attributes".into())),
        nested("attributes", &attribute),
    );
    entries.insert(
        Key::String(Arc::new("capacity".into())),
        nested("capacity", &capacity),
    );
    cel::Value::Map(Map {
        map: Arc::new(entries),
    })
}

/// Verdicts kept (a verdict depends on the expression alone); emptied when full.
const CACHE_ENTRIES: usize = 4096;

/// Checks a selector expression as upstream's `CompileCELExpression` does (remembering the
/// verdicts of recent expressions: a claim can hold hundreds of selectors).
pub(super) fn check(expression: &str) -> Verdict {
    static CACHE: LazyLock<Mutex<HashMap<String, Verdict>>> = LazyLock::new(Mutex::default);
    if let Some(hit) = CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(expression)
    {
        return hit.clone();
    }
    let verdict = check_uncached(expression);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= CACHE_ENTRIES {
        cache.clear();
    }
    cache.insert(expression.to_string(), verdict.clone());
    verdict
}

fn check_uncached(expression: &str) -> Verdict {
    let program = match parse_in(env(), expression) {
        Ok(p) => p,
        // cel-go indents the source snippet with a space.
        Err(e) => {
            return Verdict::Invalid(format!(
                "compilation failed: {}",
                e.0.replace("\n| ", "\n | ")
            ));
        }
    };
    let ty = match check::check(&program, expression, &[("device", device_type())]) {
        Ok(ty) => ty,
        Err(e) => return Verdict::Invalid(format!("compilation failed: {e}")),
    };
    if !check::may_be(&ty, &Ty::Bool) {
        return Verdict::Invalid(format!(
            "must evaluate to bool or the unknown type, not {ty}"
        ));
    }
    let vars = [("device", device_shape()), ("optional", Shape::scalar())];
    match cost::estimate_with(program.expression(), &vars, &library_cost) {
        Ok(c) if c > MAX_COST => Verdict::TooComplex,
        Ok(_) => Verdict::Valid,
        Err(e) => Verdict::Invalid(format!("compilation failed: ERROR: <input>: {e}")),
    }
}

/// Whether the selector `expression` selects `device` (the JSON form of a
/// `kubernetes.DRADevice`: `driver`, `attributes` and `capacity` by domain, and
/// `allowMultipleAllocations`), or why it could not be evaluated (upstream's allocator then
/// fails the allocation with that error).
pub(crate) fn device_selected(
    expression: &str,
    device: &serde_json::Value,
) -> Result<bool, String> {
    static PROGRAMS: LazyLock<Mutex<HashMap<String, Arc<cel::Program>>>> =
        LazyLock::new(Mutex::default);
    let cached = PROGRAMS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(expression)
        .cloned();
    let program = match cached {
        Some(p) => p,
        None => {
            let program = Arc::new(
                parse_in(env(), expression).map_err(|e| format!("compilation failed: {}", e.0))?,
            );
            let mut programs = PROGRAMS.lock().unwrap_or_else(|e| e.into_inner());
            if programs.len() >= CACHE_ENTRIES {
                programs.clear();
            }
            programs.insert(expression.to_string(), Arc::clone(&program));
            program
        }
    };
    let mut ctx = cel::Context::with_env(env().clone());
    ctx.add_variable_from_value("device", device_value(device));
    match cel::Value::resolve(program.expression(), &ctx) {
        Ok(cel::Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!(
            "CEL result of type {} could not be converted to bool",
            other.type_of()
        )),
        Err(e) => Err(format!("CEL runtime error: {e}")),
    }
}

/// The largest `device` there can be (upstream's declared sizes).
fn device_shape() -> Shape {
    let map = |len: u64, key: u64, values: Shape| Shape {
        len,
        weight: len.saturating_mul(key + values.weight + 1) + 1,
        fields: BTreeMap::new(),
        items: Some(Arc::new(values)),
        keys: None,
    };
    let attributes = map(
        MAX_DEVICE_ENTRIES,
        MAX_DOMAIN,
        map(
            MAX_DEVICE_ENTRIES,
            MAX_ID,
            Shape::opaque(MAX_ATTRIBUTE_VALUE),
        ),
    );
    let capacity = map(
        MAX_DEVICE_ENTRIES,
        MAX_DOMAIN,
        map(
            MAX_DEVICE_ENTRIES,
            MAX_ID,
            Shape::opaque(MAX_ATTRIBUTE_VALUE),
        ),
    );
    let mut fields = BTreeMap::new();
    let weight = attributes.weight + capacity.weight + MAX_DRIVER + 64;
    fields.insert("driver".to_string(), Arc::new(Shape::opaque(MAX_DRIVER)));
    fields.insert("attributes".to_string(), Arc::new(attributes));
    fields.insert("capacity".to_string(), Arc::new(capacity));
    fields.insert(
        "allowMultipleAllocations".to_string(),
        Arc::new(Shape::scalar()),
    );
    Shape {
        len: 4,
        weight,
        fields,
        items: None,
        keys: None,
    }
}

/// The quantity and semver libraries' costs: linear in their arguments.
fn library_cost(name: &str, args: &[Shape]) -> Option<(u64, Shape)> {
    let total = args
        .iter()
        .fold(1u64, |acc, s| acc.saturating_add(s.weight));
    let weight = |i: usize| args.get(i).map_or(1, |s| s.weight);
    match name {
        // The regex library: linear in text × pattern, as `matches`.
        "find" => Some((
            total.saturating_add(weight(0).saturating_mul(weight(1))),
            Shape::opaque(weight(0)),
        )),
        "findAll" => {
            let text = weight(0);
            let shape = Shape {
                len: text,
                weight: text.saturating_mul(2),
                fields: BTreeMap::new(),
                items: Some(Arc::new(Shape::opaque(text))),
                keys: None,
            };
            Some((total.saturating_add(text.saturating_mul(weight(1))), shape))
        }
        // The lists library walks its list once (sorting compares within it).
        "isSorted" | "sum" | "min" | "max" => {
            let list = args.first().cloned().unwrap_or_default();
            let item = list.items.as_deref().cloned().unwrap_or_else(Shape::scalar);
            Some((total.saturating_mul(2), item))
        }
        // Optional values: no bigger than what they wrap.
        "_?._" | "_[?_]" | "value" | "of" | "ofNonZeroValue" | "orValue" | "or" => {
            let largest = args.iter().map(|a| a.weight).max().unwrap_or(1);
            Some((total, Shape::opaque(largest)))
        }
        "hasValue" | "none" => Some((1, Shape::scalar())),
        "quantity" | "semver" | "add" | "sub" => Some((total, Shape::opaque(MAX_ATTRIBUTE_VALUE))),
        "isQuantity" | "isSemver" | "compareTo" | "isGreaterThan" | "isLessThan" | "sign"
        | "isInteger" | "asInteger" | "asApproximateFloat" | "major" | "minor" | "patch" => {
            Some((total, Shape::scalar()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(expression: &str) -> String {
        match check(expression) {
            Verdict::Invalid(detail) => detail,
            other => panic!("{expression}: {other:?}"),
        }
    }

    #[test]
    fn device_selectors_compile() {
        for valid in [
            "device.driver == 'gpu.example.com'",
            "device.attributes['gpu.example.com'].model == 'a100'",
            "device.attributes['gpu.example.com'].count > 2",
            "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0",
            "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('1Gi'))",
            "device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
            "cel.bind(dra, device.attributes['dra.example.com'], dra.a && dra.b)",
            "device.allowMultipleAllocations",
            "'gpu.example.com' in device.attributes",
            "has(device.attributes.x)",
            "device.attributes['d'].exists(k, k.startsWith('x'))",
            "device.attributes['d'].name",
            "device.driver.find('[a-z]+') == 'gpu'",
            "device.driver.findAll('[a-z]+').size() > 1",
            "[1, 2, 3].isSorted() && [1, 2].sum() == 3",
            "device.attributes['gpu.example.com'].?model.orValue('') == 'a100'",
            "device.attributes[?'gpu.example.com'].hasValue()",
            "optional.of(device.driver).value() == 'x' || optional.none().hasValue()",
        ] {
            assert_eq!(check(valid), Verdict::Valid, "{valid}");
        }
    }

    #[test]
    fn compile_errors_as_cel_go_reports_them() {
        assert_eq!(
            invalid("foo == 1"),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^"
        );
        assert!(
            invalid("device.nope")
                .starts_with("compilation failed: ERROR: <input>:1:7: undefined field 'nope'"),
            "{}",
            invalid("device.nope")
        );
        assert!(invalid("device.driver ==").starts_with("compilation failed: ERROR: <input>:1:"));
        assert!(
            invalid("device.driver + 1 == 'a'")
                .contains("found no matching overload for '_+_' applied to '(string, int)'")
        );
        assert!(invalid("frob(device)").contains("undeclared reference to 'frob'"));
        assert_eq!(
            invalid("device.driver"),
            "must evaluate to bool or the unknown type, not string"
        );
        assert_eq!(
            invalid("device.capacity['x'].memory"),
            "must evaluate to bool or the unknown type, not kubernetes.Quantity"
        );
        assert_eq!(
            invalid("device.attributes['x'].?model"),
            "must evaluate to bool or the unknown type, not optional_type(dyn)"
        );
        assert_eq!(
            invalid("device.attributes"),
            "must evaluate to bool or the unknown type, not map(string, map(string, dyn))"
        );
    }

    #[test]
    fn nested_iteration_over_devices_is_too_complex() {
        let cheap = "device.attributes.all(d, device.attributes[d].all(a, a != ''))";
        assert_eq!(check(cheap), Verdict::Valid);
        let costly = "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, \
                      device.attributes.all(d, device.attributes.all(e, a + b + c + d + e != '')))))";
        assert_eq!(check(costly), Verdict::TooComplex);
        // Upstream's own example of a selector over the cost limit.
        let list = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]";
        let upstream = format!(
            "{list}.all(x, {list}.all(y, {list}.all(z, {list}.all(z1, int('1'.find('[0-9]*')) < 100))))"
        );
        assert_eq!(check(&upstream), Verdict::TooComplex);
        let three = format!("{list}.all(x, {list}.all(y, {list}.all(z, int('1') < 100)))");
        assert_eq!(check(&three), Verdict::Valid);
    }
}
