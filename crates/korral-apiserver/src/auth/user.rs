//! Who is making a request: user names, groups and the well-known identities.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The user the server's admin token authenticates as.
pub const ADMIN_USER: &str = "korral-admin";
/// The group that every RBAC check allows (like upstream's `system:masters`).
pub const MASTERS_GROUP: &str = "system:masters";
/// The group of every authenticated user.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of every service account.
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// Prefix of service account user names: `system:serviceaccount:<ns>:<name>`.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// An authenticated identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name, e.g. `system:serviceaccount:default:robot`.
    pub name: String,
    /// Unique id (service accounts: the ServiceAccount's uid), may be empty.
    pub uid: String,
    /// Groups the user belongs to.
    pub groups: Vec<String>,
    /// Extra attributes (e.g. from `Impersonate-Extra-*`).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The server administrator: `korral-admin` in `system:masters`.
    pub fn admin() -> Self {
        Self {
            name: ADMIN_USER.to_string(),
            uid: String::new(),
            groups: vec![MASTERS_GROUP.to_string(), AUTHENTICATED_GROUP.to_string()],
            extra: BTreeMap::new(),
        }
    }

    /// A service account's identity with its fixed groups.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            name: service_account_user(namespace, name),
            uid: uid.to_string(),
            groups: service_account_groups(namespace),
            extra: BTreeMap::new(),
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The `UserInfo` JSON of authentication.k8s.io (`username`, `uid`, `groups`, `extra`).
    pub fn to_json(&self) -> Value {
        let mut out = json!({"username": self.name});
        if let Some(map) = out.as_object_mut() {
            if !self.uid.is_empty() {
                map.insert("uid".into(), json!(self.uid));
            }
            if !self.groups.is_empty() {
                map.insert("groups".into(), json!(self.groups));
            }
            if !self.extra.is_empty() {
                map.insert("extra".into(), json!(self.extra));
            }
        }
        out
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// Splits a service account user name into namespace and name.
pub fn parse_service_account_user(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    if namespace.is_empty() || name.is_empty() || name.contains(':') {
        return None;
    }
    Some((namespace, name))
}

/// The groups of every service account in `namespace`, plus `system:authenticated`.
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        SERVICE_ACCOUNTS_GROUP.to_string(),
        format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
        AUTHENTICATED_GROUP.to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_round_trip() {
        let user = service_account_user("default", "robot");
        assert_eq!(user, "system:serviceaccount:default:robot");
        assert_eq!(
            parse_service_account_user(&user),
            Some(("default", "robot"))
        );
        assert_eq!(parse_service_account_user("system:serviceaccount:x"), None);
        assert_eq!(parse_service_account_user("alice"), None);
        let sa = UserInfo::service_account("ns", "a", "u1");
        assert!(sa.in_group("system:serviceaccounts:ns"));
        assert!(sa.in_group(AUTHENTICATED_GROUP));
    }
}
