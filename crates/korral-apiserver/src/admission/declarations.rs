//! The declarations admission expressions are checked against, as upstream declares them
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/compile.go`): `object`,
//! `oldObject`, `params`, `request` (`kubernetes.AdmissionRequest`), `namespaceObject`
//! (`kubernetes.Namespace`), the authorizer and a policy's `variables`. One set serves the
//! checks at creation (`object` and `params` are `dyn` there) and the
//! ValidatingAdmissionPolicy status controller (which types them from the matched kinds'
//! schemas).

use std::collections::BTreeMap;

use cel::Program;
use serde_json::Value;

use crate::validation::cel::check::{self, Ty};
use crate::validation::cel::compile::{env, parse_in};
use crate::validation::cel::library::authz;

/// One of a policy's `spec.variables`: its name, its expression and the expression parsed
/// (`None` when it does not parse).
pub(crate) struct Variable<'a> {
    /// The variable's name.
    pub name: &'a str,
    /// Its expression.
    pub source: &'a str,
    /// The expression parsed.
    pub program: Option<Program>,
}

/// The `spec.variables` of a policy, in order, each parsed once.
pub(crate) fn variables(spec: &Value) -> Vec<Variable<'_>> {
    spec.get("variables")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|v| {
            let text = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or("");
            let source = text("expression");
            Variable {
                name: text("name"),
                source,
                program: parse_in(env(), source).ok(),
            }
        })
        .collect()
}

/// The variables a policy's expressions are checked with: `object` and `oldObject` of type
/// `object` (`dyn` when the kind is not known), `request`, `namespaceObject`, the authorizer
/// (when `authorizer`; message expressions go without it), `params` (when the policy has a
/// `paramKind`) and, when `variables` is given, `variables` holding them with the types their
/// expressions have (each checked with the authorizer and the variables before it; upstream
/// declares `variables` only for policies that have some).
pub(crate) fn environment(
    object: Ty,
    params: Option<&Ty>,
    variables: Option<&[Variable<'_>]>,
    authorizer: bool,
) -> Vec<(&'static str, Ty)> {
    let Some(variables) = variables else {
        return base(object, params, authorizer);
    };
    let mut fields = BTreeMap::new();
    if !variables.is_empty() {
        let base = base(object.clone(), params, true);
        for Variable {
            name,
            source,
            program,
        } in variables
        {
            let mut scope = base.clone();
            scope.push((
                "variables",
                Ty::object("kubernetes.variables", fields.clone()),
            ));
            // A variable that does not compile is `dyn`.
            let ty = program
                .as_ref()
                .and_then(|p| check::check(p, source, &scope).ok())
                .map_or(Ty::Dyn, |t| variable_type(&t));
            fields.insert((*name).to_string(), ty);
        }
    }
    let mut vars = base(object, params, authorizer);
    vars.push(("variables", Ty::object("kubernetes.variables", fields)));
    vars
}

/// The declarations of a policy's expressions when it is written: `object`, `oldObject` and
/// `params` (given a `paramKind`) are `dyn`; `variables` holds the first `upto` of the
/// policy's variables (all of them when `None`), declared when the policy has any.
pub(crate) fn policy_environment(
    spec: &Value,
    variables: &[Variable<'_>],
    upto: Option<usize>,
    authorizer: bool,
) -> Vec<(&'static str, Ty)> {
    let params = spec
        .get("paramKind")
        .is_some_and(Value::is_object)
        .then_some(Ty::Dyn);
    let declared = (!variables.is_empty())
        .then(|| &variables[..upto.unwrap_or(variables.len()).min(variables.len())]);
    environment(Ty::Dyn, params.as_ref(), declared, authorizer)
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
