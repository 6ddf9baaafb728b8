//! The authorization library (`kubernetes.authz` and `kubernetes.authzSelectors`): admission
//! expressions ask the server's authorizer whether the requesting user (or a service account)
//! may do something.
//!
//! ```text
//! authorizer.group('apps').resource('deployments').namespace('ns').check('update').allowed()
//! authorizer.path('/healthz').check('get').allowed()
//! authorizer.serviceAccount('ns', 'robot').group('').resource('pods').check('list').reason()
//! authorizer.requestResource.subresource('status').check('patch').allowed()
//! ```
//!
//! The values are opaque, as upstream's: an [`Authorizer`] (the user and the server's
//! authorizer), a path check, a group check, a resource check (built up one attribute at a
//! time: `subresource`, `namespace`, `name`, `fieldSelector`, `labelSelector`) and the
//! decision of `check(verb)` (`allowed()`, `reason()`, `errored()`, `error()`). A resource
//! check asks about every version (`*`) of the group's resource, as upstream's does.

use std::fmt;
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::{error, function, opaque, opaque_arg, opaque_type, string_arg};
use crate::auth::{Attributes, Decision, UserInfo};

/// The CEL type name of an authorizer.
pub const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
/// The CEL type name of a non-resource path check.
pub const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
/// The CEL type name of an API group check.
pub const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
/// The CEL type name of a resource check.
pub const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
/// The CEL type name of an authorization decision.
pub const DECISION: &str = "kubernetes.authorization.Decision";

/// The library's type names.
pub const TYPE_NAMES: [&str; 5] = [
    AUTHORIZER,
    PATH_CHECK,
    GROUP_CHECK,
    RESOURCE_CHECK,
    DECISION,
];

/// The variable holding the request's authorizer.
pub const VARIABLE: &str = "authorizer";
/// The variable holding a resource check of the request's own resource.
pub const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// The server's authorization decision for a set of attributes.
pub type AuthorizeFn = Arc<dyn Fn(&Attributes) -> Decision + Send + Sync>;

/// An authorizer bound to a user: the value of `authorizer`.
#[derive(Clone)]
pub struct Authorizer {
    user: UserInfo,
    authorize: AuthorizeFn,
}

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer")
            .field("user", &self.user.name)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        self.user == other.user && Arc::ptr_eq(&self.authorize, &other.authorize)
    }
}

impl Eq for Authorizer {}

impl Opaque for Authorizer {
    fn runtime_type_name(&self) -> &str {
        AUTHORIZER
    }
}

/// The resource a request addresses (the `authorizer.requestResource` check's attributes).
#[derive(Debug, Clone, Default)]
pub struct RequestResource {
    /// API group, empty for core.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource, empty when none.
    pub subresource: String,
    /// Namespace, empty when cluster-scoped.
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl Authorizer {
    /// An authorizer asking `authorize` on behalf of `user`.
    pub fn new(user: UserInfo, authorize: AuthorizeFn) -> Self {
        Self { user, authorize }
    }

    /// The CEL variables of an admission request: `authorizer` and
    /// `authorizer.requestResource` (a check of `request`'s resource).
    pub fn variables(&self, request: &RequestResource) -> [(&'static str, Value); 2] {
        let check = ResourceCheck {
            authorizer: self.clone(),
            group: request.group.clone(),
            resource: request.resource.clone(),
            subresource: request.subresource.clone(),
            namespace: request.namespace.clone(),
            name: request.name.clone(),
            field_selector: String::new(),
            label_selector: String::new(),
        };
        [
            (VARIABLE, opaque(self.clone())),
            (REQUEST_RESOURCE, opaque(check)),
        ]
    }

    fn decide(&self, attrs: Attributes) -> Value {
        let decision = (self.authorize)(&attrs);
        opaque(Verdict {
            allowed: decision.allowed,
            reason: decision.reason,
        })
    }
}

/// `authorizer.path(p)`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PathCheck {
    authorizer: Authorizer,
    path: String,
}

impl Opaque for PathCheck {
    fn runtime_type_name(&self) -> &str {
        PATH_CHECK
    }
}

/// `authorizer.group(g)`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GroupCheck {
    authorizer: Authorizer,
    group: String,
}

impl Opaque for GroupCheck {
    fn runtime_type_name(&self) -> &str {
        GROUP_CHECK
    }
}

/// `authorizer.group(g).resource(r)` and its refinements.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ResourceCheck {
    authorizer: Authorizer,
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    /// Kept as given: the RBAC authorizer decides without selectors, as upstream's.
    field_selector: String,
    /// Kept as given, as `field_selector`.
    label_selector: String,
}

impl Opaque for ResourceCheck {
    fn runtime_type_name(&self) -> &str {
        RESOURCE_CHECK
    }
}

/// The outcome of `check(verb)`. The server's authorizers decide without failing, so a
/// decision never carries an error (`errored()` is false, `error()` empty).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verdict {
    allowed: bool,
    reason: String,
}

impl Opaque for Verdict {
    fn runtime_type_name(&self) -> &str {
        DECISION
    }
}

fn string(s: impl Into<String>) -> Value {
    Value::String(Arc::new(s.into()))
}

/// `authorizer.path(p)`: upstream refuses a blank path.
fn path(args: &[Value]) -> Result<Value, ExecutionError> {
    let authorizer = opaque_arg::<Authorizer>(args, 0)?;
    let path = string_arg(args, 1)?;
    if path.trim().is_empty() {
        return Err(error("path", "path must not be empty"));
    }
    Ok(opaque(PathCheck {
        authorizer: authorizer.clone(),
        path: path.to_string(),
    }))
}

fn group(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(opaque(GroupCheck {
        authorizer: opaque_arg::<Authorizer>(args, 0)?.clone(),
        group: string_arg(args, 1)?.to_string(),
    }))
}

/// `authorizer.serviceAccount(namespace, name)`: an authorizer for the service account's
/// user (its name and its two service-account groups, as upstream's `ServiceAccountInfo`).
fn service_account(args: &[Value]) -> Result<Value, ExecutionError> {
    let authorizer = opaque_arg::<Authorizer>(args, 0)?;
    let namespace = string_arg(args, 1)?;
    let name = string_arg(args, 2)?;
    if !crate::validation::names::dns1123_subdomain(name).is_empty() {
        return Err(error("serviceAccount", "Invalid service account name"));
    }
    if !crate::validation::names::dns1123_label(namespace).is_empty() {
        return Err(error("serviceAccount", "Invalid service account namespace"));
    }
    let mut user = UserInfo::service_account(namespace, name, "");
    user.groups
        .retain(|g| g != crate::auth::user::AUTHENTICATED_GROUP);
    Ok(opaque(Authorizer {
        user,
        authorize: authorizer.authorize.clone(),
    }))
}

/// `groupCheck.resource(r)`: upstream refuses a blank resource.
fn resource(args: &[Value]) -> Result<Value, ExecutionError> {
    let g = opaque_arg::<GroupCheck>(args, 0)?;
    let resource = string_arg(args, 1)?;
    if resource.trim().is_empty() {
        return Err(error("resource", "resource must not be empty"));
    }
    Ok(opaque(ResourceCheck {
        authorizer: g.authorizer.clone(),
        group: g.group.clone(),
        resource: resource.to_string(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        field_selector: String::new(),
        label_selector: String::new(),
    }))
}

/// A copy of the resource check with one attribute set.
fn refine(args: &[Value], set: fn(&mut ResourceCheck, String)) -> Result<Value, ExecutionError> {
    let mut check = opaque_arg::<ResourceCheck>(args, 0)?.clone();
    set(&mut check, string_arg(args, 1)?.to_string());
    Ok(opaque(check))
}

fn check_path(args: &[Value]) -> Result<Value, ExecutionError> {
    let c = opaque_arg::<PathCheck>(args, 0)?;
    let attrs = Attributes {
        user: c.authorizer.user.clone(),
        verb: string_arg(args, 1)?.to_string(),
        path: c.path.clone(),
        ..Attributes::default()
    };
    Ok(c.authorizer.decide(attrs))
}

fn check_resource(args: &[Value]) -> Result<Value, ExecutionError> {
    let c = opaque_arg::<ResourceCheck>(args, 0)?;
    let attrs = Attributes {
        user: c.authorizer.user.clone(),
        verb: string_arg(args, 1)?.to_string(),
        resource_request: true,
        namespace: c.namespace.clone(),
        api_group: c.group.clone(),
        api_version: "*".into(),
        resource: c.resource.clone(),
        subresource: c.subresource.clone(),
        name: c.name.clone(),
        path: String::new(),
    };
    Ok(c.authorizer.decide(attrs))
}

fn verdict(args: &[Value]) -> Result<&Verdict, ExecutionError> {
    opaque_arg::<Verdict>(args, 0)
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ty = |name: &'static str| -> Type { opaque_type(name) };
    for name in TYPE_NAMES {
        env.add_type(ty(name))?;
    }
    let authorizer = || ty(AUTHORIZER);
    let resource_check = || ty(RESOURCE_CHECK);
    let decision = || ty(DECISION);
    env.add_member_overload(
        "path",
        "authorizer_path",
        authorizer(),
        vec![STRING_TYPE],
        function!(path),
    )?;
    env.add_member_overload(
        "group",
        "authorizer_group",
        authorizer(),
        vec![STRING_TYPE],
        function!(group),
    )?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        authorizer(),
        vec![STRING_TYPE, STRING_TYPE],
        function!(service_account),
    )?;
    env.add_member_overload(
        "resource",
        "groupcheck_resource",
        ty(GROUP_CHECK),
        vec![STRING_TYPE],
        function!(resource),
    )?;
    let refinements = [
        (
            "subresource",
            "resourcecheck_subresource",
            function!(|a| refine(a, |c, v| c.subresource = v)),
        ),
        (
            "namespace",
            "resourcecheck_namespace",
            function!(|a| refine(a, |c, v| c.namespace = v)),
        ),
        (
            "name",
            "resourcecheck_name",
            function!(|a| refine(a, |c, v| c.name = v)),
        ),
        (
            "fieldSelector",
            "authorizer_fieldselector",
            function!(|a| refine(a, |c, v| c.field_selector = v)),
        ),
        (
            "labelSelector",
            "authorizer_labelselector",
            function!(|a| refine(a, |c, v| c.label_selector = v)),
        ),
    ];
    for (name, id, f) in refinements {
        env.add_member_overload(name, id, resource_check(), vec![STRING_TYPE], f)?;
    }
    env.add_member_overload(
        "check",
        "pathcheck_check",
        ty(PATH_CHECK),
        vec![STRING_TYPE],
        function!(check_path),
    )?;
    env.add_member_overload(
        "check",
        "resourcecheck_check",
        resource_check(),
        vec![STRING_TYPE],
        function!(check_resource),
    )?;
    env.add_member_overload(
        "allowed",
        "decision_allowed",
        decision(),
        vec![],
        function!(|a| Ok(Value::Bool(verdict(a)?.allowed))),
    )?;
    env.add_member_overload(
        "reason",
        "decision_reason",
        decision(),
        vec![],
        function!(|a| Ok(string(verdict(a)?.reason.clone()))),
    )?;
    env.add_member_overload(
        "errored",
        "decision_errored",
        decision(),
        vec![],
        function!(|a| verdict(a).map(|_| Value::Bool(false))),
    )?;
    env.add_member_overload(
        "error",
        "decision_error",
        decision(),
        vec![],
        function!(|a| verdict(a).map(|_| string(""))),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use cel::Context;

    use super::*;
    use crate::validation::cel::compile::{env, parse_in};

    /// An authorizer that allows `alice` to `get` and records what it was asked.
    fn recording() -> (Authorizer, Arc<Mutex<Vec<Attributes>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let authorize: AuthorizeFn = Arc::new(move |attrs: &Attributes| {
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(attrs.clone());
            if attrs.user.name == "alice" && attrs.verb == "get" {
                Decision::allow("RBAC: allowed by test")
            } else {
                Decision::deny("")
            }
        });
        let user = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        (Authorizer::new(user, authorize), asked)
    }

    fn eval(authorizer: &Authorizer, source: &str) -> Result<Value, String> {
        let program = parse_in(env(), source).map_err(|e| e.to_string())?;
        let mut ctx = Context::with_env(env().clone());
        let request = RequestResource {
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: "scale".into(),
            namespace: "ns".into(),
            name: "web".into(),
        };
        for (name, value) in authorizer.variables(&request) {
            ctx.add_variable_from_value(name, value);
        }
        program
            .execute(&ctx)
            .map_err(|e| super::super::error_message(&e).unwrap_or_else(|| e.to_string()))
    }

    #[test]
    fn resource_checks_carry_every_attribute() {
        let (a, asked) = recording();
        let got = eval(
            &a,
            "authorizer.group('').resource('pods').namespace('ns').name('p').subresource('log')\
             .fieldSelector('spec.nodeName=n').labelSelector('a=b').check('get').allowed()",
        );
        assert_eq!(got, Ok(Value::Bool(true)));
        let asked = asked.lock().unwrap_or_else(|e| e.into_inner());
        let attrs = &asked[0];
        assert!(attrs.resource_request);
        assert_eq!(
            (
                attrs.api_group.as_str(),
                attrs.api_version.as_str(),
                attrs.resource.as_str(),
                attrs.subresource.as_str(),
                attrs.namespace.as_str(),
                attrs.name.as_str(),
                attrs.verb.as_str(),
            ),
            ("", "*", "pods", "log", "ns", "p", "get")
        );
    }

    #[test]
    fn decisions_answer_allowed_reason_and_error() {
        let (a, _) = recording();
        let check = "authorizer.group('apps').resource('deployments')";
        let t = |s: &str| eval(&a, s);
        assert_eq!(
            t(&format!("{check}.check('get').reason()")),
            Ok(Value::String(Arc::new("RBAC: allowed by test".into())))
        );
        assert_eq!(
            t(&format!("{check}.check('delete').allowed()")),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            t(&format!("{check}.check('delete').errored()")),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            t(&format!("{check}.check('delete').error()")),
            Ok(Value::String(Arc::new(String::new())))
        );
    }

    #[test]
    fn path_checks_are_non_resource_requests() {
        let (a, asked) = recording();
        assert_eq!(
            eval(&a, "authorizer.path('/healthz').check('get').allowed()"),
            Ok(Value::Bool(true))
        );
        let asked = asked.lock().unwrap_or_else(|e| e.into_inner());
        assert!(!asked[0].resource_request);
        assert_eq!(asked[0].path, "/healthz");
    }

    #[test]
    fn service_accounts_are_asked_about_with_their_groups() {
        let (a, asked) = recording();
        assert_eq!(
            eval(
                &a,
                "authorizer.serviceAccount('ns', 'robot').group('').resource('pods').check('get').allowed()"
            ),
            Ok(Value::Bool(false))
        );
        let asked = asked.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(asked[0].user.name, "system:serviceaccount:ns:robot");
        assert_eq!(
            asked[0].user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
    }

    #[test]
    fn the_request_resource_is_a_resource_check() {
        let (a, asked) = recording();
        assert_eq!(
            eval(&a, "authorizer.requestResource.check('get').allowed()"),
            Ok(Value::Bool(true))
        );
        let asked = asked.lock().unwrap_or_else(|e| e.into_inner());
        let attrs = &asked[0];
        assert_eq!(
            (
                attrs.api_group.as_str(),
                attrs.resource.as_str(),
                attrs.subresource.as_str(),
                attrs.namespace.as_str(),
                attrs.name.as_str(),
            ),
            ("apps", "deployments", "scale", "ns", "web")
        );
    }

    #[test]
    fn bad_arguments_fail_with_upstreams_messages() {
        let (a, _) = recording();
        for (source, message) in [
            (
                "authorizer.path(' ').check('get')",
                "path must not be empty",
            ),
            (
                "authorizer.group('').resource('').check('get')",
                "resource must not be empty",
            ),
            (
                "authorizer.serviceAccount('ns', 'Bad_Name')",
                "Invalid service account name",
            ),
            (
                "authorizer.serviceAccount('Bad.NS', 'robot')",
                "Invalid service account namespace",
            ),
        ] {
            assert_eq!(eval(&a, source), Err(message.to_string()), "{source}");
        }
    }
}
