//! The declarations admission expressions are checked against, as upstream declares them
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/compile.go`): `object`,
//! `oldObject`, `params`, `request` (`kubernetes.AdmissionRequest`), `namespaceObject`
//! (`kubernetes.Namespace`), the authorizer and a policy's `variables`. One set serves the
//! checks at creation (`object` and `params` are `dyn` there) and the
//! ValidatingAdmissionPolicy status controller (which types them from the matched kinds'
//! schemas).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::validation::cel::check::Ty;
use crate::validation::cel::library::authz;

/// One of a policy's `spec.variables`: its name and its expression.
pub(crate) struct Variable<'a> {
    /// The variable's name.
    pub name: &'a str,
    /// Its expression.
    pub source: &'a str,
}

/// The `spec.variables` of a policy, in order.
pub(crate) fn variables(spec: &Value) -> Vec<Variable<'_>> {
    spec.get("variables")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|v| {
            let text = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or("");
            Variable {
                name: text("name"),
                source: text("expression"),
            }
        })
        .collect()
}

/// A policy's variables checked in one pass, each with the authorizer and the variables
/// before it (upstream's composited compiler): the fields of `variables` with the types their
/// expressions have (`dyn` for one that does not compile), and each variable's own error.
pub(crate) struct Composed {
    /// The fields of `variables`.
    pub fields: BTreeMap<String, Ty>,
    /// Each variable's compile error, in order (`None` when it compiles).
    pub errors: Vec<Option<String>>,
}

/// Checks `variables` in order with `object` and `params`.
pub(crate) fn compose(object: Ty, params: Option<&Ty>, variables: &[Variable<'_>]) -> Composed {
    let mut scope = base(object, params, true);
    let mut fields = BTreeMap::new();
    let mut errors = Vec::with_capacity(variables.len());
    for Variable { name, source } in variables {
        scope.push((
            "variables",
            Ty::object("kubernetes.variables", fields.clone()),
        ));
        let checked = super::cel::check_typed(source, &scope, super::cel::Returns::Any);
        scope.pop();
        let ty = checked.as_ref().map_or(Ty::Dyn, variable_type);
        fields.insert((*name).to_string(), ty);
        errors.push(checked.err());
    }
    Composed { fields, errors }
}

/// The variables a policy's expressions are checked with: `object` and `oldObject` of type
/// `object` (`dyn` when the kind is not known), `request`, `namespaceObject`, the authorizer
/// (when `authorizer`; message expressions go without it), `params` (when the policy has a
/// `paramKind`) and, when `variables` is given, `variables` with those fields (upstream
/// declares `variables` only for policies that have some).
pub(crate) fn environment(
    object: Ty,
    params: Option<&Ty>,
    variables: Option<&BTreeMap<String, Ty>>,
    authorizer: bool,
) -> Vec<(&'static str, Ty)> {
    let mut vars = base(object, params, authorizer);
    if let Some(fields) = variables {
        vars.push((
            "variables",
            Ty::object("kubernetes.variables", fields.clone()),
        ));
    }
    vars
}

/// The type of a policy's `params` when it is written: `dyn` given a `paramKind`.
fn written_params(spec: &Value) -> Option<Ty> {
    spec.get("paramKind")
        .is_some_and(Value::is_object)
        .then_some(Ty::Dyn)
}

/// A policy's variables checked as when it is written (`object`, `oldObject` and `params`
/// `dyn`).
pub(crate) fn policy_composition(spec: &Value, variables: &[Variable<'_>]) -> Composed {
    compose(Ty::Dyn, written_params(spec).as_ref(), variables)
}

/// The declarations of a policy's expressions when it is written: `object`, `oldObject` and
/// `params` (given a `paramKind`) are `dyn`; `variables` holds the composed variables, declared
/// when the policy has any (`None`: expressions that never see them, match conditions).
pub(crate) fn policy_environment(
    spec: &Value,
    composed: Option<&Composed>,
    authorizer: bool,
) -> Vec<(&'static str, Ty)> {
    let params = written_params(spec);
    // One error slot per variable: none means the policy has none.
    let fields = composed.filter(|c| !c.errors.is_empty()).map(|c| &c.fields);
    environment(Ty::Dyn, params.as_ref(), fields, authorizer)
}

/// The declarations of a webhook's match conditions: `object`, `oldObject` (`dyn`),
/// `request`, `namespaceObject` and the authorizer.
pub(crate) fn webhook_environment() -> Vec<(&'static str, Ty)> {
    base(Ty::Dyn, None, true)
}

/// Every declaration but `variables`.
fn base(object: Ty, params: Option<&Ty>, authorizer: bool) -> Vec<(&'static str, Ty)> {
    let mut vars: Vec<(&str, Ty)> = vec![
        ("object", object.clone()),
        ("oldObject", object),
        ("request", request_type()),
        ("namespaceObject", namespace_type()),
    ];
    if authorizer {
        vars.push((authz::VARIABLE, Ty::Opaque(authz::AUTHORIZER)));
        vars.push((authz::REQUEST_RESOURCE, Ty::Opaque(authz::RESOURCE_CHECK)));
    }
    if let Some(p) = params {
        vars.push(("params", p.clone()));
    }
    vars
}

/// The type a variable is declared with, given its expression's type (upstream's
/// `convertCelTypeToDeclType`: primitive types, lists and maps of them; `dyn` otherwise).
pub(crate) fn variable_type(t: &Ty) -> Ty {
    match t {
        Ty::Bool
        | Ty::Bytes
        | Ty::Double
        | Ty::Duration
        | Ty::Int
        | Ty::Null
        | Ty::Str
        | Ty::Timestamp
        | Ty::Uint => t.clone(),
        Ty::List(e) => Ty::list(variable_type(e)),
        Ty::Map(k, v) => Ty::map(variable_type(k), variable_type(v)),
        _ => Ty::Dyn,
    }
}

/// Fields of a hand-written object type.
fn fields(list: &[(&str, Ty)]) -> BTreeMap<String, Ty> {
    list.iter()
        .map(|(n, t)| ((*n).to_string(), t.clone()))
        .collect()
}

/// The type of `request`: upstream's `kubernetes.AdmissionRequest` (no `uid`, `object` or
/// `oldObject`).
pub(crate) fn request_type() -> Ty {
    let gvk = Ty::object(
        "kubernetes.GroupVersionKind",
        fields(&[("group", Ty::Str), ("version", Ty::Str), ("kind", Ty::Str)]),
    );
    let gvr = Ty::object(
        "kubernetes.GroupVersionResource",
        fields(&[
            ("group", Ty::Str),
            ("version", Ty::Str),
            ("resource", Ty::Str),
        ]),
    );
    let user = Ty::object(
        "kubernetes.UserInfo",
        fields(&[
            ("username", Ty::Str),
            ("uid", Ty::Str),
            ("groups", Ty::list(Ty::Str)),
            ("extra", Ty::map(Ty::Str, Ty::list(Ty::Str))),
        ]),
    );
    Ty::object(
        "kubernetes.AdmissionRequest",
        fields(&[
            ("kind", gvk.clone()),
            ("resource", gvr.clone()),
            ("subResource", Ty::Str),
            ("requestKind", gvk),
            ("requestResource", gvr),
            ("requestSubResource", Ty::Str),
            ("name", Ty::Str),
            ("namespace", Ty::Str),
            ("operation", Ty::Str),
            ("userInfo", user),
            ("dryRun", Ty::Bool),
            ("options", Ty::Dyn),
        ]),
    )
}

/// The type of `namespaceObject`: upstream's `kubernetes.Namespace` (some metadata left out).
pub(crate) fn namespace_type() -> Ty {
    let strings = Ty::list(Ty::Str);
    let string_map = Ty::map(Ty::Str, Ty::Str);
    let condition = Ty::object(
        "kubernetes.NamespaceCondition",
        fields(&[
            ("status", Ty::Str),
            ("type", Ty::Str),
            ("lastTransitionTime", Ty::Timestamp),
            ("message", Ty::Str),
            ("reason", Ty::Str),
        ]),
    );
    let metadata = Ty::object(
        "kubernetes.NamespaceMetadata",
        fields(&[
            ("name", Ty::Str),
            ("generateName", Ty::Str),
            ("namespace", Ty::Str),
            ("labels", string_map.clone()),
            ("annotations", string_map),
            ("UID", Ty::Str),
            ("creationTimestamp", Ty::Timestamp),
            ("deletionGracePeriodSeconds", Ty::Int),
            ("deletionTimestamp", Ty::Timestamp),
            ("generation", Ty::Int),
            ("resourceVersion", Ty::Str),
            ("finalizers", strings.clone()),
        ]),
    );
    Ty::object(
        "kubernetes.Namespace",
        fields(&[
            ("metadata", metadata),
            (
                "spec",
                Ty::object(
                    "kubernetes.NamespaceSpec",
                    fields(&[("finalizers", strings)]),
                ),
            ),
            (
                "status",
                Ty::object(
                    "kubernetes.NamespaceStatus",
                    fields(&[("conditions", Ty::list(condition)), ("phase", Ty::Str)]),
                ),
            ),
        ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pass types every variable with those before it and keeps each one's own error.
    #[test]
    fn variables_are_composed_in_one_pass() {
        let spec = serde_json::json!({"variables": [
            {"name": "a", "expression": "1"},
            {"name": "b", "expression": "variables.a + 'x'"},
            {"name": "c", "expression": "[variables.a]"},
            {"name": "d", "expression": "variables.later"},
            {"name": "later", "expression": "true"},
        ]});
        let composed = policy_composition(&spec, &variables(&spec));
        assert_eq!(composed.fields["a"], Ty::Int);
        assert_eq!(composed.fields["b"], Ty::Dyn);
        assert_eq!(composed.fields["c"], Ty::list(Ty::Int));
        assert_eq!(composed.fields["later"], Ty::Bool);
        let errors: Vec<bool> = composed.errors.iter().map(Option::is_some).collect();
        assert_eq!(errors, [false, true, false, true, false]);
        // The environment of the other expressions holds them all; match conditions none.
        let declared = policy_environment(&spec, Some(&composed), false);
        assert!(declared.iter().any(|(n, _)| *n == "variables"));
        assert!(!declared.iter().any(|(n, _)| *n == authz::VARIABLE));
        let conditions = policy_environment(&spec, None, true);
        assert!(!conditions.iter().any(|(n, _)| *n == "variables"));
    }
}
