use serde_json::json;

use super::schema::self_type;
use super::*;
use crate::validation::cel::compile::{env, parse_in, parse_with};

fn spec_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {
        "replicas": {"type": "integer"},
        "name": {"type": "string"},
        "ratio": {"type": "number"},
        "port": {"x-kubernetes-int-or-string": true},
        "items": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "at": {"type": "string", "format": "date-time"},
        "ttl": {"type": "string", "format": "duration"},
        "nested": {"type": "object", "properties": {"x": {"type": "integer"}}},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "port": {"type": "integer"}}}},
    }})
}

/// Checks `source` as a CRD rule is checked (literal aggregates left to the checker).
fn typed(source: &str) -> Result<Ty, String> {
    let program = parse_with(env(), source, false).map_err(|e| e.0)?;
    let t = self_type(&spec_schema(), false);
    check(&program, source, &[("self", t.clone()), ("oldSelf", t)])
}

fn error(source: &str) -> String {
    match typed(source) {
        Err(e) => e,
        Ok(t) => panic!("{source}: checked as {t}"),
    }
}

#[test]
fn well_typed_rules_check() {
    for (rule, ty) in [
        ("self.replicas > 1", "bool"),
        ("self.replicas > 1.5", "bool"),
        ("self.ratio < 2", "bool"),
        ("self.name + 'x'", "string"),
        ("self.items + ['a']", "list(string)"),
        ("self.items.map(i, i.size())", "list(int)"),
        ("self.items.filter(i, i != '')", "list(string)"),
        ("self.items.all(i, i.startsWith('a'))", "bool"),
        ("self.labels.all(k, self.labels[k] != k)", "bool"),
        ("self.labels.exists(k, v, k == v)", "bool"),
        ("self.items.exists_one(i, i == 'a')", "bool"),
        ("self.ports.transformList(i, p, p.port)", "list(int)"),
        (
            "self.labels.transformMap(k, v, v.size())",
            "map(string, int)",
        ),
        ("self.items.transformMap(i, v, v == 'a')", "map(int, bool)"),
        (
            "self.labels.transformMap(k, v, k != '', [v, k])",
            "map(string, list(string))",
        ),
        ("self.labels.transformMap(k, v, v == 'a')['x']", "bool"),
        (
            "self.labels.transformMapEntry(k, v, {v: k.size()})",
            "map(string, int)",
        ),
        ("self.labels.transformMapEntry(k, v, {v: k}).size()", "int"),
        ("has(self.nested.x) && self.nested.x == 1", "bool"),
        ("has(self.labels.x)", "bool"),
        ("self.labels.x", "string"),
        ("self.port == 80 || self.port == '80%'", "bool"),
        ("type(self.port) == string", "bool"),
        ("self.at + self.ttl > self.at", "bool"),
        ("self.at - self.at", "google.protobuf.Duration"),
        ("'a' in self.items && 'k' in self.labels", "bool"),
        ("self.replicas == 1 ? 'one' : 'many'", "string"),
        ("cel.bind(n, self.nested, n.x > 0)", "bool"),
        ("self.?nested.x.orValue(0) > 1", "bool"),
        ("self.?nested.?x", "optional_type(int)"),
        ("self.labels[?'a'].hasValue()", "bool"),
        ("self.items.sortBy(i, i.size())", "list(string)"),
        ("quantity('1Gi').isGreaterThan(quantity(self.name))", "bool"),
        ("isIP(self.name) && ip(self.name).family() == 4", "bool"),
        ("url(self.name).getQuery()", "map(string, list(string))"),
        ("sets.contains(self.items, ['a'])", "bool"),
        (
            "format.dns1123Label().validate(self.name).hasValue()",
            "bool",
        ),
        ("optional.of(self.name).value()", "string"),
        ("self.items.sum()", "string"),
        ("dyn(self.name).anything", "dyn"),
        ("self.nested == null", "bool"),
        ("[1, 2, 3].slice(0, 1)", "list(int)"),
        ("self.ports.map(p, p.name).join(',')", "string"),
        ("type(ip(self.name)) == net.IP", "bool"),
        // cel-go's standard environment declares the well-known types' qualified names.
        ("type(self.at) == google.protobuf.Timestamp", "bool"),
        ("type(self.ttl) != google.protobuf.Duration", "bool"),
        ("google.protobuf.Timestamp", "type"),
        ("[google.protobuf.Duration, int]", "list(type)"),
    ] {
        match typed(rule) {
            Ok(t) => assert_eq!(t.to_string(), ty, "{rule}"),
            Err(e) => panic!("{rule}: {e}"),
        }
    }
}

#[test]
fn undefined_fields_are_reported_with_a_caret() {
    assert_eq!(
        error("self.replica > 1"),
        "ERROR: <input>:1:5: undefined field 'replica'\n | self.replica > 1\n | ....^"
    );
    assert_eq!(
        // `has()` is positioned at its call's parenthesis, as cel-go's macros are.
        error("has(self.nested.y)"),
        "ERROR: <input>:1:4: undefined field 'y'\n | has(self.nested.y)\n | ...^"
    );
    assert!(error("self.ports.all(p, p.nmae != '')").contains("undefined field 'nmae'"));
}

#[test]
fn mismatched_operands_find_no_overload() {
    assert_eq!(
        error("self.name + 1 == 'a'"),
        "ERROR: <input>:1:11: found no matching overload for '_+_' applied to '(string, int)'\n | self.name + 1 == 'a'\n | ..........^"
    );
    assert!(
        error("self.items.reverse() == self.name.reverse()")
            .contains("found no matching overload for 'reverse' applied to 'string.()'")
    );
    assert!(
        error("self.replicas == '1'")
            .contains("found no matching overload for '_==_' applied to '(int, string)'")
    );
    assert!(
        error("self.name == null")
            .contains("found no matching overload for '_==_' applied to '(string, null_type)'")
    );
    assert!(error("self.replicas && true").contains("applied to '(int, bool)'"));
    assert!(error("self.items[0] > 1").contains("applied to '(string, int)'"));
    assert!(
        error("self.items['a'] == ''")
            .contains("found no matching overload for '_[_]' applied to '(list(string), string)'")
    );
    assert!(error("self.items.all(i, i.size())").contains("'_&&_' applied to '(bool, int)'"));
}

#[test]
fn other_errors_read_as_cel_go_reports_them() {
    assert!(error("self.name.x == 1").contains("type 'string' does not support field selection"));
    assert!(error("nope == 1").contains("undeclared reference to 'nope' (in container '')"));
    assert!(error("self.frob()").contains("undeclared reference to 'frob' (in container '')"));
    assert!(error("self.replicas.all(x, x > 0)").contains(
        "expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)"
    ));
    assert!(error("[self.name, 1].size() > 0").contains("expected type 'string' but found 'int'"));
    assert!(
        error("self.nested.y.z == 1 && self.replica > 0")
            .contains("\nERROR: <input>:1:29: undefined field 'replica'")
    );
}

#[test]
fn dyn_unifies_with_anything() {
    let program = parse_in(env(), "self.a.b + 1 > self.c[0]").expect("parses");
    assert_eq!(
        check(&program, "self.a.b + 1 > self.c[0]", &[("self", Ty::Dyn)]),
        Ok(Ty::Bool)
    );
}

#[test]
fn extension_signatures_are_checked() {
    for (rule, applied) in [
        (
            "self.l.slice('a', 1).size() == 0",
            "'slice' applied to 'dyn.(string, int)'",
        ),
        (
            "self.l.flatten(1, 2).size() == 0",
            "'flatten' applied to 'dyn.(int, int)'",
        ),
        (
            "lists.range('a').size() == 0",
            "'lists.range' applied to '(string)'",
        ),
        ("'abc'.sort().size() == 0", "'sort' applied to 'string.()'"),
        (
            "[1].first(1).hasValue()",
            "'first' applied to 'list(int).(int)'",
        ),
        // Kubernetes enables the string extension at version 2, without `reverse`.
        (
            "'abc'.reverse() == 'cba'",
            "'reverse' applied to 'string.()'",
        ),
        (
            "self.a.charAt('x') == ''",
            "'charAt' applied to 'dyn.(string)'",
        ),
        (
            "self.a.split(1).size() == 0",
            "'split' applied to 'dyn.(int)'",
        ),
        ("'%d'.format(1) == ''", "'format' applied to 'string.(int)'"),
        ("quantity(1).isInteger()", "'quantity' applied to '(int)'"),
        (
            "sets.contains([1], ['a'])",
            "'sets.contains' applied to '(list(int), list(string))'",
        ),
    ] {
        let program = parse_in(env(), rule).expect("parses");
        match check(&program, rule, &[("self", Ty::Dyn)]) {
            Err(e) => assert!(
                e.contains(&format!("found no matching overload for {applied}")),
                "{rule}: {e}"
            ),
            Ok(t) => panic!("{rule}: checked as {t}"),
        }
    }
}

/// Which expressions cel-go types `dyn` (and kube-apiserver so refuses as a rule): an
/// int-or-string field, a value of a `dyn` map, a ternary or list literal with a `dyn` branch
/// or element; comparisons and conversions of them stay precise.
#[test]
fn dyn_is_the_type_cel_go_infers() {
    let schema = json!({"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": true},
        "flag": {"type": "boolean"},
        "ports": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}},
    }});
    let t = self_type(&schema, false);
    let typed = |source: &str| {
        let program = parse_in(env(), source).expect("parses");
        check(&program, source, &[("self", t.clone())]).expect(source)
    };
    for (rule, ty) in [
        ("self.port", Ty::Dyn),
        ("self.ports['a']", Ty::Dyn),
        ("self.ports.a", Ty::Dyn),
        ("dyn(self.flag)", Ty::Dyn),
        ("self.flag ? true : self.port", Ty::Dyn),
        ("self.flag ? self.port : true", Ty::Dyn),
        ("[self.flag, self.port][0]", Ty::Dyn),
        ("[self.port, self.flag][0]", Ty::Dyn),
        ("self.port == 1", Ty::Bool),
        ("self.ports['a'] == 'x'", Ty::Bool),
        ("has(self.port) ? self.flag : false", Ty::Bool),
        ("[self.flag, true][0]", Ty::Bool),
        ("[[true], []][0][0]", Ty::Bool),
        ("string(self.port)", Ty::Str),
        ("self.port.startsWith('a')", Ty::Bool),
    ] {
        assert_eq!(typed(rule), ty, "{rule}");
    }
}

/// Literal lists and maps with elements of differing types are refused by the checker as
/// cel-go's (homogeneous aggregate literals): at each offending element, with its line,
/// column and caret, every issue in source order.
#[test]
fn mixed_literals_are_reported_where_cel_go_reports_them() {
    assert_eq!(
        error("[1, 'a'] == []"),
        "ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a'] == []\n | ....^"
    );
    assert_eq!(
        error("[[1], ['a']].size() == 2"),
        "ERROR: <input>:1:7: expected type 'list(int)' but found 'list(string)'\n | [[1], ['a']].size() == 2\n | ......^"
    );
    assert_eq!(
        error("{'a': 1, 2: 'x'}.size() == 2"),
        "ERROR: <input>:1:10: expected type 'string' but found 'int'\n | {'a': 1, 2: 'x'}.size() == 2\n | .........^\nERROR: <input>:1:13: expected type 'int' but found 'string'\n | {'a': 1, 2: 'x'}.size() == 2\n | ............^"
    );
    assert_eq!(
        error("self.replicas > 0 &&\n  [1,\n   2.0].size() == 2"),
        "ERROR: <input>:3:4: expected type 'int' but found 'double'\n |    2.0].size() == 2\n | ...^"
    );
    // Issues print in source order (cel-go sorts them), though arguments are checked before
    // the call that takes them.
    assert_eq!(
        error("frob(self.nope)"),
        "ERROR: <input>:1:5: undeclared reference to 'frob' (in container '')\n | frob(self.nope)\n | ....^\nERROR: <input>:1:10: undefined field 'nope'\n | frob(self.nope)\n | .........^"
    );
}

/// A qualified type name is a type unless its root is a variable, as cel-go resolves it; its
/// other prefixes are not names.
#[test]
fn qualified_type_names_resolve_unless_shadowed() {
    let source = "google.protobuf.Timestamp";
    let program = parse_in(env(), source).expect("parses");
    let shadow = Ty::map(Ty::Str, Ty::map(Ty::Str, Ty::Int));
    assert_eq!(check(&program, source, &[("google", shadow)]), Ok(Ty::Int));
    for (source, at, name) in [
        ("google.protobuf.Timestamps == int", 1, "google"),
        ("google.protobuf == int", 1, "google"),
        ("protobuf.Timestamp == int", 1, "protobuf"),
    ] {
        let e = error(source);
        assert!(
            e.starts_with(&format!(
                "ERROR: <input>:1:{at}: undeclared reference to '{name}' (in container '')"
            )),
            "{source}: {e}"
        );
    }
}
