//! The create-only review APIs and TokenRequest:
//!
//! * `authorization.k8s.io/v1`: SelfSubjectAccessReview, SubjectAccessReview,
//!   LocalSubjectAccessReview, SelfSubjectRulesReview (`kubectl auth can-i [--list]`);
//! * `authentication.k8s.io/v1`: SelfSubjectReview (`kubectl auth whoami`), TokenReview;
//! * `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` (TokenRequest).
//!
//! Nothing is stored: each answers with the request object and a computed `status`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::attributes::Attributes;
use super::token::{BoundObject, BoundObjects, ISSUER};
use super::user::UserInfo;
use super::{Auth, now_seconds, rbac};
use crate::error::{ApiError, Cause};
use crate::server::AuthorizationMode;

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

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn invalid(review: Review, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(review.group(), review.kind(), name, causes)
}

/// The attributes an access review's spec asks about.
fn spec_attributes(review: Review, user: UserInfo, spec: &Value) -> Result<Attributes, ApiError> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(_), Some(n)) => Err(invalid(
            review,
            "",
            vec![Cause::invalid(
                "spec.nonResourceAttributes",
                n,
                "cannot be specified in combination with resourceAttributes",
            )],
        )),
        (None, None) => Err(invalid(
            review,
            "",
            vec![Cause::invalid(
                "spec.resourceAttributes",
                &json!("null"),
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )],
        )),
        (Some(r), None) => Ok(Attributes {
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
        }),
        (None, Some(n)) => Ok(Attributes {
            user,
            verb: str_at(n, "verb").to_string(),
            resource_request: false,
            path: str_at(n, "path").to_string(),
            ..Attributes::default()
        }),
    }
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

/// The user a SubjectAccessReview's spec names.
fn spec_user(review: Review, spec: &Value) -> Result<UserInfo, ApiError> {
    let user = str_at(spec, "user").to_string();
    let groups = strings(spec.get("groups"));
    if user.is_empty() && groups.is_empty() {
        return Err(invalid(
            review,
            "",
            vec![Cause::invalid(
                "spec.user",
                &json!(""),
                "at least one of user or group must be specified",
            )],
        ));
    }
    let mut extra = BTreeMap::new();
    if let Some(map) = spec.get("extra").and_then(Value::as_object) {
        for (k, v) in map {
            extra.insert(k.clone(), strings(Some(v)));
        }
    }
    Ok(UserInfo {
        name: user,
        uid: str_at(spec, "uid").to_string(),
        groups,
        extra,
    })
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
        Review::SelfSubjectAccess => {
            let attrs = spec_attributes(review, user.clone(), &spec)?;
            Ok(answer(review, body, access_status(auth.authorize(&attrs))))
        }
        Review::SubjectAccess => {
            let subject = spec_user(review, &spec)?;
            let attrs = spec_attributes(review, subject, &spec)?;
            Ok(answer(review, body, access_status(auth.authorize(&attrs))))
        }
        Review::LocalSubjectAccess => {
            let namespace = namespace.unwrap_or("");
            if let Some(n) = spec.get("nonResourceAttributes").filter(|v| !v.is_null()) {
                return Err(invalid(
                    review,
                    "",
                    vec![Cause::invalid(
                        "spec.nonResourceAttributes",
                        n,
                        "disallowed on this kind of request",
                    )],
                ));
            }
            let subject = spec_user(review, &spec)?;
            let attrs = spec_attributes(review, subject, &spec)?;
            if attrs.namespace != namespace {
                return Err(invalid(
                    review,
                    "",
                    vec![Cause::invalid(
                        "spec.resourceAttributes.namespace",
                        &json!(attrs.namespace),
                        "must match metadata.namespace",
                    )],
                ));
            }
            Ok(answer(review, body, access_status(auth.authorize(&attrs))))
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
