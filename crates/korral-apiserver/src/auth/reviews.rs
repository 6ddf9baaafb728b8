//! The create-only review APIs and TokenRequest:
//!
//! * `authorization.k8s.io/v1`: SelfSubjectAccessReview, SubjectAccessReview,
//!   LocalSubjectAccessReview, SelfSubjectRulesReview (`kubectl auth can-i [--list]`);
//! * `authentication.k8s.io/v1`: SelfSubjectReview (`kubectl auth whoami`), TokenReview;
//! * `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` (TokenRequest).
//!
//! Nothing is stored: each answers with the request object and a computed `status`. Access
//! reviews are validated as upstream validates them, their resource attributes' field and label
//! selectors included; the RBAC authorizer ignores selectors, and those the attributes builder
//! cannot parse are reported in `status.evaluationError` as upstream reports them.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::attributes::Attributes;
use super::token::{BoundObject, BoundObjects, ISSUER};
use super::user::UserInfo;
use super::{Auth, now_seconds, rbac};
use crate::error::{ApiError, Cause};
use crate::meta::strings;
use crate::selector::{FieldSelector, LabelSelector, Operator, Requirement};
use crate::server::AuthorizationMode;
use crate::validation::names::{
    child, go_quote, index, invalid_rendered, validate_label_value, validate_qualified_name,
};

const AUTHZ: &str = "authorization.k8s.io";
const AUTHN: &str = "authentication.k8s.io";

/// Which review a request addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// `selfsubjectaccessreviews`.
    SelfSubjectAccess,
    /// `subjectaccessreviews`.
    SubjectAccess,
    /// `localsubjectaccessreviews` (namespaced).
    LocalSubjectAccess,
    /// `selfsubjectrulesreviews`.
    SelfSubjectRules,
    /// `selfsubjectreviews`.
    SelfSubject,
    /// `tokenreviews`.
    Token,
    /// `serviceaccounts/<name>/token`.
    TokenRequest,
}

impl Review {
    /// The review served at `group/resource[/subresource]`, if any.
    pub fn of(group: &str, resource: &str, subresource: Option<&str>) -> Option<Self> {
        Some(match (group, resource, subresource) {
            (AUTHZ, "selfsubjectaccessreviews", None) => Self::SelfSubjectAccess,
            (AUTHZ, "subjectaccessreviews", None) => Self::SubjectAccess,
            (AUTHZ, "localsubjectaccessreviews", None) => Self::LocalSubjectAccess,
            (AUTHZ, "selfsubjectrulesreviews", None) => Self::SelfSubjectRules,
            (AUTHN, "selfsubjectreviews", None) => Self::SelfSubject,
            (AUTHN, "tokenreviews", None) => Self::Token,
            ("", "serviceaccounts", Some("token")) => Self::TokenRequest,
            _ => return None,
        })
    }

    fn kind(self) -> &'static str {
        match self {
            Self::SelfSubjectAccess => "SelfSubjectAccessReview",
            Self::SubjectAccess => "SubjectAccessReview",
            Self::LocalSubjectAccess => "LocalSubjectAccessReview",
            Self::SelfSubjectRules => "SelfSubjectRulesReview",
            Self::SelfSubject => "SelfSubjectReview",
            Self::Token => "TokenReview",
            Self::TokenRequest => "TokenRequest",
        }
    }

    fn group(self) -> &'static str {
        match self {
            Self::SelfSubjectAccess
            | Self::SubjectAccess
            | Self::LocalSubjectAccess
            | Self::SelfSubjectRules => AUTHZ,
            Self::SelfSubject | Self::Token | Self::TokenRequest => AUTHN,
        }
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn invalid(review: Review, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(review.group(), review.kind(), name, causes)
}

/// A member that is present and not null.
fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|v| !v.is_null())
}

/// The items of a JSON list (none when it is not one).
fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Every cause upstream's `Validate{Self,Local,}SubjectAccessReview` finds in an access
/// review's spec (`pkg/apis/authorization/validation`), in its order: exactly one kind of
/// attributes, a user or group (not for a SelfSubjectAccessReview), the resource attributes'
/// selectors, and for a LocalSubjectAccessReview the namespace of the path (`namespace`) and
/// no non-resource attributes. The metadata checks are not made.
fn access_review_causes(review: Review, spec: &Value, namespace: &str) -> Vec<Cause> {
    let resource = present(spec, "resourceAttributes");
    let non_resource = present(spec, "nonResourceAttributes");
    let mut causes = Vec::new();
    match (resource, non_resource) {
        (Some(_), Some(n)) => causes.push(Cause::invalid(
            "spec.nonResourceAttributes",
            n,
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => causes.push(Cause::invalid(
            "spec.resourceAttributes",
            &json!("null"),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
    if review != Review::SelfSubjectAccess
        && str_at(spec, "user").is_empty()
        && items(spec.get("groups")).is_empty()
    {
        causes.push(Cause::invalid(
            "spec.user",
            &json!(""),
            "at least one of user or group must be specified",
        ));
    }
    if let Some(r) = resource {
        causes.extend(selector_causes(r));
    }
    if review == Review::LocalSubjectAccess {
        if let Some(r) = resource
            && str_at(r, "namespace") != namespace
        {
            causes.push(Cause::invalid(
                "spec.resourceAttributes.namespace",
                &json!(str_at(r, "namespace")),
                "must match metadata.namespace",
            ));
        }
        if let Some(n) = non_resource {
            causes.push(Cause::invalid(
                "spec.nonResourceAttributes",
                n,
                "disallowed on this kind of request",
            ));
        }
    }
    causes
}

/// Upstream's `validateFieldSelectorAttributes` and `validateLabelSelectorAttributes`: a
/// selector has a `rawSelector` or `requirements`, not both; each requirement is checked as
/// `ValidateFieldSelectorRequirement` / `ValidateLabelSelectorRequirement` check it with
/// `AllowUnknownOperatorInRequirement` (an operator the server does not know is no error).
fn selector_causes(resource_attributes: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (field, labels) in [("fieldSelector", false), ("labelSelector", true)] {
        let Some(selector) = present(resource_attributes, field) else {
            continue;
        };
        let path = child("spec.resourceAttributes", field);
        let raw = str_at(selector, "rawSelector");
        let requirements = items(selector.get("requirements"));
        if !raw.is_empty() && !requirements.is_empty() {
            causes.push(invalid_rendered(
                &child(&path, "rawSelector"),
                &go_quote(raw),
                "may not specified at the same time as requirements",
            ));
        }
        if raw.is_empty() && requirements.is_empty() {
            causes.push(Cause::required(
                child(&path, "requirements"),
                &format!("when {path} is specified, requirements or rawSelector is required"),
            ));
        }
        for (i, requirement) in requirements.iter().enumerate() {
            let at = index(&child(&path, "requirements"), i);
            let key = str_at(requirement, "key");
            let values = items(requirement.get("values"));
            if !labels && key.is_empty() {
                causes.push(Cause::required(child(&at, "key"), "must be specified"));
            }
            match str_at(requirement, "operator") {
                "In" | "NotIn" if values.is_empty() => causes.push(Cause::required(
                    child(&at, "values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )),
                "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(Cause::forbidden(
                    child(&at, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )),
                _ => {}
            }
            if labels {
                for msg in validate_qualified_name(key) {
                    causes.push(invalid_rendered(&child(&at, "key"), &go_quote(key), &msg));
                }
                for (j, value) in values.iter().enumerate() {
                    let value = value.as_str().unwrap_or("");
                    for msg in validate_label_value(value) {
                        causes.push(invalid_rendered(
                            &index(&child(&at, "values"), j),
                            &go_quote(value),
                            &msg,
                        ));
                    }
                }
            }
        }
    }
    causes
}

/// Whether the authorizer attributes builder (upstream's `ResourceAttributesFrom`) fails to
/// parse (part of) a field selector: `None` when it parses, else whether some requirements
/// were kept. Requirements supersede a `rawSelector`, as upstream's builder reads them.
fn field_selector_ignored(selector: &Value) -> Option<bool> {
    let raw = str_at(selector, "rawSelector");
    let requirements = items(selector.get("requirements"));
    if requirements.is_empty() {
        return (!raw.is_empty() && FieldSelector::parse_str(raw).is_err()).then_some(false);
    }
    // `fieldSelectorAsSelector`: one value for In and NotIn; Exists and DoesNotExist are not
    // supported yet.
    let kept = requirements
        .iter()
        .filter(|r| {
            matches!(str_at(r, "operator"), "In" | "NotIn") && items(r.get("values")).len() == 1
        })
        .count();
    (kept < requirements.len()).then_some(kept > 0)
}

/// [`field_selector_ignored`] for a label selector (`labels.Parse`, or upstream's
/// `labelSelectorAsSelector` of the requirements).
fn label_selector_ignored(selector: &Value) -> Option<bool> {
    let raw = str_at(selector, "rawSelector");
    let requirements = items(selector.get("requirements"));
    if requirements.is_empty() {
        return (!raw.is_empty() && LabelSelector::parse_str(raw).is_err()).then_some(false);
    }
    let kept = requirements
        .iter()
        .filter(|r| {
            let operator = match str_at(r, "operator") {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                _ => return false,
            };
            let values = strings(r.get("values"));
            Requirement::new(str_at(r, "key"), operator, values, None).is_ok()
        })
        .count();
    (kept < requirements.len()).then_some(kept > 0)
}

/// Upstream's `BuildEvaluationError` for selectors the attributes builder could not parse
/// (the authorizer itself, RBAC, reports no error and ignores selectors).
fn selector_evaluation_error(resource_attributes: &Value) -> Option<String> {
    let mut errors = Vec::new();
    for (field, ignored) in [
        (
            "fieldSelector",
            field_selector_ignored as fn(&Value) -> Option<bool>,
        ),
        ("labelSelector", label_selector_ignored),
    ] {
        let Some(partially) = present(resource_attributes, field).and_then(ignored) else {
            continue;
        };
        let how = if partially {
            "partially ignored"
        } else {
            "ignored"
        };
        errors.push(format!(
            "spec.resourceAttributes.{field} {how} due to parse error"
        ));
    }
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// The attributes a valid access review's spec asks about.
fn spec_attributes(user: UserInfo, spec: &Value) -> Attributes {
    match present(spec, "resourceAttributes") {
        Some(r) => Attributes {
            user,
            verb: str_at(r, "verb").to_string(),
            resource_request: true,
            namespace: str_at(r, "namespace").to_string(),
            api_group: str_at(r, "group").to_string(),
            api_version: str_at(r, "version").to_string(),
            resource: str_at(r, "resource").to_string(),
            subresource: str_at(r, "subresource").to_string(),
            name: str_at(r, "name").to_string(),
            path: String::new(),
        },
        None => {
            let n = present(spec, "nonResourceAttributes").unwrap_or(&Value::Null);
            Attributes {
                user,
                verb: str_at(n, "verb").to_string(),
                resource_request: false,
                path: str_at(n, "path").to_string(),
                ..Attributes::default()
            }
        }
    }
}

/// Answers an access review: validates its spec, then authorizes what it asks about for
/// `requester` (a SelfSubjectAccessReview) or the user its spec names.
fn access_review(
    auth: &Auth,
    requester: &UserInfo,
    review: Review,
    namespace: &str,
    body: Value,
    spec: &Value,
) -> Result<Value, ApiError> {
    let causes = access_review_causes(review, spec, namespace);
    if !causes.is_empty() {
        return Err(invalid(review, "", causes));
    }
    let subject = if review == Review::SelfSubjectAccess {
        requester.clone()
    } else {
        spec_user(spec)
    };
    let attrs = spec_attributes(subject, spec);
    let decision = auth.authorize(&attrs);
    let mut status = access_status(decision);
    if let Some(error) = present(spec, "resourceAttributes").and_then(selector_evaluation_error)
        && let Some(map) = status.as_object_mut()
    {
        map.insert("evaluationError".into(), json!(error));
    }
    Ok(answer(review, body, status))
}

fn answer(review: Review, mut body: Value, status: Value) -> Value {
    if !body.is_object() {
        body = json!({});
    }
    if let Some(map) = body.as_object_mut() {
        map.insert("kind".into(), json!(review.kind()));
        map.insert("apiVersion".into(), json!(format!("{}/v1", review.group())));
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = metadata.as_object_mut() {
            meta.insert(
                "creationTimestamp".into(),
                json!(crate::meta::now_rfc3339()),
            );
        }
        map.insert("status".into(), status);
    }
    body
}

fn access_status(decision: rbac::Decision) -> Value {
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty()
        && let Some(map) = status.as_object_mut()
    {
        map.insert("reason".into(), json!(decision.reason));
    }
    status
}

/// The user a (validated) SubjectAccessReview's spec names.
fn spec_user(spec: &Value) -> UserInfo {
    let mut extra = BTreeMap::new();
    if let Some(map) = spec.get("extra").and_then(Value::as_object) {
        for (k, v) in map {
            extra.insert(k.clone(), strings(Some(v)));
        }
    }
    UserInfo {
        name: str_at(spec, "user").to_string(),
        uid: str_at(spec, "uid").to_string(),
        groups: strings(spec.get("groups")),
        extra,
    }
}

/// Serves a review for `user` (the authenticated, possibly impersonated, requester).
/// `namespace` and `name` come from the path; `body` is the decoded request object.
pub fn serve(
    auth: &Auth,
    user: &UserInfo,
    review: Review,
    namespace: Option<&str>,
    name: Option<&str>,
    body: Value,
) -> Result<Value, ApiError> {
    let empty = json!({});
    let spec = body.get("spec").unwrap_or(&empty).clone();
    match review {
        Review::SelfSubjectAccess | Review::SubjectAccess | Review::LocalSubjectAccess => {
            access_review(auth, user, review, namespace.unwrap_or(""), body, &spec)
        }
        Review::SelfSubjectRules => {
            let namespace = str_at(&spec, "namespace");
            let (resource_rules, non_resource_rules, errors) = match auth.mode() {
                AuthorizationMode::AlwaysAllow => (
                    vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
                    vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
                    Vec::new(),
                ),
                AuthorizationMode::Rbac => {
                    rbac::rules_for(&auth.objects().storage().snapshot(), user, namespace)
                }
            };
            let mut status = json!({
                "resourceRules": resource_rules,
                "nonResourceRules": non_resource_rules,
                "incomplete": !errors.is_empty(),
            });
            if !errors.is_empty()
                && let Some(map) = status.as_object_mut()
            {
                map.insert("evaluationError".into(), json!(errors.join(", ")));
            }
            Ok(answer(review, body, status))
        }
        Review::SelfSubject => Ok(answer(review, body, json!({"userInfo": user.to_json()}))),
        Review::Token => {
            let token = str_at(&spec, "token");
            let asked = strings(spec.get("audiences"));
            let asked = (!asked.is_empty()).then_some(asked.as_slice());
            let status = match auth.authenticate_token(token, asked) {
                Ok((who, audiences)) if !token.is_empty() => {
                    let mut s = json!({"authenticated": true, "user": who.to_json()});
                    if !audiences.is_empty()
                        && let Some(map) = s.as_object_mut()
                    {
                        map.insert("audiences".into(), json!(audiences));
                    }
                    s
                }
                Ok(_) => {
                    json!({"authenticated": false, "user": {}, "error": "invalid bearer token"})
                }
                Err(why) => {
                    json!({"authenticated": false, "user": {}, "error": why.review_error()})
                }
            };
            Ok(answer(review, body, status))
        }
        Review::TokenRequest => token_request(auth, namespace, name, body, &spec),
    }
}

/// The objects a TokenRequest's `boundObjectRef` binds the token of service account `name` to,
/// as upstream's TokenREST resolves them: a Pod running as that account (and its node), a
/// Node or a Secret; the reference's uid, when given, must be the object's.
fn bind(
    auth: &Auth,
    namespace: &str,
    name: &str,
    reference: &Value,
) -> Result<BoundObjects, ApiError> {
    let kind = str_at(reference, "kind");
    let api_version = str_at(reference, "apiVersion");
    let object_name = str_at(reference, "name");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let objects = auth.objects();
    let get = |resource: &str, ns: Option<&str>, object: &str| {
        let info = objects
            .registry()
            .get("", "v1", resource)
            .ok_or_else(ApiError::unknown_resource)?;
        objects.get(&info, ns, object)
    };
    let mut bound = BoundObjects::default();
    let found = match (group, kind) {
        ("", "Pod") => {
            let pod = get("pods", Some(namespace), object_name)?;
            if crate::meta::path(&pod, "spec.serviceAccountName")
                .and_then(Value::as_str)
                .unwrap_or("")
                != name
            {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {name:?} to pod running with different serviceaccount name."
                )));
            }
            let node_name = crate::meta::path(&pod, "spec.nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !node_name.is_empty() {
                let uid = match get("nodes", None, node_name) {
                    Ok(node) => crate::meta::uid(&node).to_string(),
                    Err(e) if e.code == 404 => String::new(),
                    Err(e) => return Err(e),
                };
                bound.node = Some(BoundObject {
                    name: node_name.to_string(),
                    uid,
                });
            }
            let object = BoundObject {
                name: object_name.to_string(),
                uid: crate::meta::uid(&pod).to_string(),
            };
            bound.pod = Some(object.clone());
            object
        }
        ("", "Node") => {
            let node = get("nodes", None, object_name)?;
            let object = BoundObject {
                name: object_name.to_string(),
                uid: crate::meta::uid(&node).to_string(),
            };
            bound.node = Some(object.clone());
            object
        }
        ("", "Secret") => {
            let secret = get("secrets", Some(namespace), object_name)?;
            let object = BoundObject {
                name: object_name.to_string(),
                uid: crate::meta::uid(&secret).to_string(),
            };
            bound.secret = Some(object.clone());
            object
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    let want = str_at(reference, "uid");
    if !want.is_empty() && want != found.uid {
        return Err(ApiError::conflict_because(
            group,
            kind,
            object_name,
            &format!(
                "the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(bound)
}

/// Issues a service account token.
fn token_request(
    auth: &Auth,
    namespace: Option<&str>,
    name: Option<&str>,
    mut body: Value,
    spec: &Value,
) -> Result<Value, ApiError> {
    let (Some(namespace), Some(name)) = (namespace, name) else {
        return Err(ApiError::method_not_allowed());
    };
    let registry = auth.objects().registry();
    let info = registry
        .get("", "v1", "serviceaccounts")
        .ok_or_else(ApiError::unknown_resource)?;
    let sa = auth.objects().get(&info, Some(namespace), name)?;
    let seconds = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => 3600,
        Some(v) => match v.as_i64() {
            Some(s) if (600..=(1i64 << 32)).contains(&s) => s,
            Some(s) if s < 600 => {
                return Err(invalid(
                    Review::TokenRequest,
                    name,
                    vec![Cause::invalid(
                        "spec.expirationSeconds",
                        v,
                        "may not specify a duration less than 10 minutes",
                    )],
                ));
            }
            _ => {
                return Err(invalid(
                    Review::TokenRequest,
                    name,
                    vec![Cause::invalid(
                        "spec.expirationSeconds",
                        v,
                        "may not specify a duration larger than 2^32 seconds",
                    )],
                ));
            }
        },
    };
    let mut audiences = strings(spec.get("audiences"));
    if audiences.is_empty() {
        audiences.push(ISSUER.to_string());
    }
    let bound = match spec.get("boundObjectRef").filter(|r| r.is_object()) {
        Some(reference) => bind(auth, namespace, name, reference)?,
        None => BoundObjects::default(),
    };
    let now = now_seconds();
    let token = auth.signer().issue(
        namespace,
        name,
        crate::meta::uid(&sa),
        &audiences,
        now,
        seconds,
        &bound,
    );
    let expires = jiff::Timestamp::from_second(now + seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    if !body.is_object() {
        body = json!({});
    }
    if let Some(map) = body.as_object_mut() {
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = metadata.as_object_mut() {
            meta.insert("name".into(), json!(name));
            meta.insert("namespace".into(), json!(namespace));
        }
        map.insert(
            "spec".into(),
            json!({
                "audiences": audiences,
                "expirationSeconds": seconds,
                "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null),
            }),
        );
    }
    Ok(answer(
        Review::TokenRequest,
        body,
        json!({"token": token, "expirationTimestamp": expires}),
    ))
}
