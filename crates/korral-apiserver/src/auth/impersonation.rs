//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-*`
//! headers, with upstream's rules: each impersonated value needs the `impersonate` verb on
//! `users`, `groups`, `uids` or `userextras/<key>` (API group `authentication.k8s.io`), or on the
//! `serviceaccounts` object for a service account user name.

use std::collections::BTreeMap;

use http::HeaderMap;

use super::Auth;
use super::attributes::Attributes;
use super::user::{
    AUTHENTICATED_GROUP, UserInfo, parse_service_account_user, service_account_groups,
};
use crate::error::ApiError;

/// `Impersonate-User`.
pub const USER_HEADER: &str = "impersonate-user";
/// `Impersonate-Group` (repeatable).
pub const GROUP_HEADER: &str = "impersonate-group";
/// `Impersonate-Uid`.
pub const UID_HEADER: &str = "impersonate-uid";
/// `Impersonate-Extra-<key>` prefix (repeatable per key).
pub const EXTRA_PREFIX: &str = "impersonate-extra-";

fn values(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .collect()
}

fn unescape(key: &str) -> String {
    form_urlencoded::parse(format!("k={}", key.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| key.to_string())
}

fn impersonate_check(
    requester: &UserInfo,
    group: &str,
    resource: &str,
    namespace: &str,
    name: &str,
    sub: &str,
) -> Attributes {
    Attributes {
        user: requester.clone(),
        verb: "impersonate".into(),
        resource_request: true,
        api_group: group.into(),
        resource: resource.into(),
        subresource: sub.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Attributes::default()
    }
}

/// Applies impersonation headers: returns the requester unchanged without them, the
/// impersonated user when every part is allowed, 403 when one is not.
pub fn impersonate(
    auth: &Auth,
    requester: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let user = values(headers, USER_HEADER).into_iter().next();
    let groups = values(headers, GROUP_HEADER);
    let uid = values(headers, UID_HEADER).into_iter().next();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in headers.keys() {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            extra
                .entry(unescape(&key.to_ascii_lowercase()))
                .or_default()
                .extend(values(headers, name.as_str()));
        }
    }
    let Some(user) = user.filter(|u| !u.is_empty()) else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(requester);
        }
        let mut requested = Vec::new();
        if !groups.is_empty() {
            requested.push(format!("groups={groups:?}"));
        }
        if let Some(uid) = &uid {
            requested.push(format!("uid={uid}"));
        }
        if !extra.is_empty() {
            requested.push(format!("extra={extra:?}"));
        }
        // Upstream answers this client mistake with a 500 InternalError; a 400 here.
        return Err(ApiError::bad_request(format!(
            "requested [{}] without impersonating a user",
            requested.join(" ")
        )));
    };
    let mut checks = Vec::new();
    let mut result_groups = groups.clone();
    if let Some((ns, name)) = parse_service_account_user(&user) {
        checks.push(impersonate_check(
            &requester,
            "",
            "serviceaccounts",
            ns,
            name,
            "",
        ));
        if groups.is_empty() {
            result_groups = service_account_groups(ns);
        }
    } else {
        checks.push(impersonate_check(
            &requester,
            "authentication.k8s.io",
            "users",
            "",
            &user,
            "",
        ));
    }
    for group in &groups {
        checks.push(impersonate_check(
            &requester,
            "authentication.k8s.io",
            "groups",
            "",
            group,
            "",
        ));
    }
    for (key, vals) in &extra {
        for value in vals {
            checks.push(impersonate_check(
                &requester,
                "authentication.k8s.io",
                "userextras",
                "",
                value,
                key,
            ));
        }
    }
    if let Some(uid) = &uid {
        checks.push(impersonate_check(
            &requester,
            "authentication.k8s.io",
            "uids",
            "",
            uid,
            "",
        ));
    }
    for check in &checks {
        auth.check(check)?;
    }
    if user != "system:anonymous" && !result_groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        result_groups.push(AUTHENTICATED_GROUP.to_string());
    }
    Ok(UserInfo {
        name: user,
        uid: uid.unwrap_or_default(),
        groups: result_groups,
        extra,
    })
}
