//! The review kinds of `authentication.k8s.io/v1` and `authorization.k8s.io/v1`: served for
//! `create` only, nothing stored (answered by `crate::auth::reviews`).

use k8s_openapi::api::{authentication::v1 as authn, authorization::v1 as authz};

use super::KindDef;
use super::strategy::Plain;

const AUTHN: &str = "authentication.k8s.io";
const AUTHZ: &str = "authorization.k8s.io";

fn review(group: &'static str, resource: &'static str, kind: &'static str) -> KindDef {
    KindDef::new(group, "v1", resource, kind, Plain)
        .cluster_scoped()
        .create_only()
}

/// The kinds of `authentication.k8s.io/v1`.
pub(super) fn authentication() -> Vec<KindDef> {
    vec![
        review(AUTHN, "selfsubjectreviews", "SelfSubjectReview")
            .schema::<authn::SelfSubjectReview>(),
        review(AUTHN, "tokenreviews", "TokenReview").schema::<authn::TokenReview>(),
    ]
}

/// The kinds of `authorization.k8s.io/v1`.
pub(super) fn authorization() -> Vec<KindDef> {
    vec![
        KindDef::new(
            AUTHZ,
            "v1",
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            Plain,
        )
        .create_only()
        .schema::<authz::LocalSubjectAccessReview>(),
        review(AUTHZ, "selfsubjectaccessreviews", "SelfSubjectAccessReview")
            .schema::<authz::SelfSubjectAccessReview>(),
        review(AUTHZ, "selfsubjectrulesreviews", "SelfSubjectRulesReview")
            .schema::<authz::SelfSubjectRulesReview>(),
        review(AUTHZ, "subjectaccessreviews", "SubjectAccessReview")
            .schema::<authz::SubjectAccessReview>(),
    ]
}
