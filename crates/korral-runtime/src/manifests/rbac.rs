//! RBAC rules: what an operator may do, derived from what its controllers watch, own and write
//! plus what the author declares, merged into the fewest `PolicyRule`s.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::Resource;

/// The verbs needed to read a type through a watch.
pub const READ_VERBS: [&str; 3] = ["get", "list", "watch"];

/// The verbs needed to manage a type the operator owns (read plus write).
pub const OWN_VERBS: [&str; 7] = [
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// One permission: some verbs on some resources of one API group.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rule {
    /// The API group (`""` for the core group).
    pub group: String,
    /// Resources (plural names, or `plural/subresource`).
    pub resources: BTreeSet<String>,
    /// Verbs.
    pub verbs: BTreeSet<String>,
}

impl Rule {
    /// A rule on `resources` of `group` without verbs yet (add them with [`Rule::verbs`]).
    pub fn new<I, S>(group: impl Into<String>, resources: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            group: group.into(),
            resources: resources.into_iter().map(Into::into).collect(),
            verbs: BTreeSet::new(),
        }
    }

    /// A rule on the resource of the Kubernetes type `K` (plural name, group from the type).
    pub fn of<K: Resource<DynamicType = ()>>() -> Self {
        Self::new(K::group(&()).into_owned(), [K::plural(&()).into_owned()])
    }

    /// A rule on the subresource `sub` (`status`, `finalizers`, `scale`) of `K`.
    pub fn subresource_of<K: Resource<DynamicType = ()>>(sub: &str) -> Self {
        Self::new(
            K::group(&()).into_owned(),
            [format!("{}/{sub}", K::plural(&()))],
        )
    }

    /// Adds verbs.
    pub fn verbs<I, S>(mut self, verbs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.verbs.extend(verbs.into_iter().map(Into::into));
        self
    }

    /// The Kubernetes `PolicyRule`.
    pub fn to_policy_rule(&self) -> PolicyRule {
        PolicyRule {
            api_groups: Some(vec![self.group.clone()]),
            resources: Some(self.resources.iter().cloned().collect()),
            verbs: self.verbs.iter().cloned().collect(),
            ..PolicyRule::default()
        }
    }
}

/// A set of permissions. Rules are merged: each `(group, resource)` gets the union of its
/// verbs, and resources of one group with the same verbs share a rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    verbs: BTreeMap<(String, String), BTreeSet<String>>,
}

impl Permissions {
    /// No permissions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a rule.
    pub fn add(&mut self, rule: Rule) {
        for resource in rule.resources {
            self.verbs
                .entry((rule.group.clone(), resource))
                .or_default()
                .extend(rule.verbs.iter().cloned());
        }
    }

    /// Adds every rule of `other`.
    pub fn merge(&mut self, other: &Permissions) {
        for ((group, resource), verbs) in &other.verbs {
            self.verbs
                .entry((group.clone(), resource.clone()))
                .or_default()
                .extend(verbs.iter().cloned());
        }
    }

    /// `get`, `list`, `watch` on `K`.
    pub fn watches<K: Resource<DynamicType = ()>>(&mut self) {
        self.add(Rule::of::<K>().verbs(READ_VERBS));
    }

    /// Read and write (`create`, `update`, `patch`, `delete`) on `K`.
    pub fn owns<K: Resource<DynamicType = ()>>(&mut self) {
        self.add(Rule::of::<K>().verbs(OWN_VERBS));
    }

    /// `get`, `update`, `patch` on the status subresource of `K`.
    pub fn writes_status<K: Resource<DynamicType = ()>>(&mut self) {
        self.add(Rule::subresource_of::<K>("status").verbs(["get", "patch", "update"]));
    }

    /// `update` on the finalizers subresource of `K` (and `update`, `patch` on `K` itself, which
    /// adding or removing a finalizer does).
    pub fn uses_finalizers<K: Resource<DynamicType = ()>>(&mut self) {
        self.add(Rule::subresource_of::<K>("finalizers").verbs(["update"]));
        self.add(Rule::of::<K>().verbs(["patch", "update"]));
    }

    /// `create`, `patch` on Events (core and `events.k8s.io`).
    pub fn records_events(&mut self) {
        self.add(Rule::new("", ["events"]).verbs(["create", "patch"]));
        self.add(Rule::new("events.k8s.io", ["events"]).verbs(["create", "patch"]));
    }

    /// Whether there is no permission at all.
    pub fn is_empty(&self) -> bool {
        self.verbs.is_empty()
    }

    /// Whether `verb` is allowed on `resource` of `group`.
    pub fn allows(&self, group: &str, resource: &str, verb: &str) -> bool {
        self.verbs
            .get(&(group.to_owned(), resource.to_owned()))
            .is_some_and(|verbs| verbs.contains(verb) || verbs.contains("*"))
    }

    /// The merged rules, sorted by group then resources.
    pub fn rules(&self) -> Vec<Rule> {
        let mut grouped: BTreeMap<(String, BTreeSet<String>), BTreeSet<String>> = BTreeMap::new();
        for ((group, resource), verbs) in &self.verbs {
            if verbs.is_empty() {
                continue;
            }
            grouped
                .entry((group.clone(), verbs.clone()))
                .or_default()
                .insert(resource.clone());
        }
        let mut rules: Vec<Rule> = grouped
            .into_iter()
            .map(|((group, verbs), resources)| Rule {
                group,
                resources,
                verbs,
            })
            .collect();
        rules.sort_by(|a, b| (&a.group, &a.resources).cmp(&(&b.group, &b.resources)));
        rules
    }

    /// The merged rules as Kubernetes `PolicyRule`s.
    pub fn policy_rules(&self) -> Vec<PolicyRule> {
        self.rules().iter().map(Rule::to_policy_rule).collect()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn verbs_merge_per_resource_and_rules_group_by_verbs() {
        let mut perms = Permissions::new();
        perms.watches::<Pod>();
        perms.owns::<Deployment>();
        perms.watches::<Deployment>();
        perms.add(Rule::new("", ["configmaps"]).verbs(READ_VERBS));
        perms.writes_status::<Deployment>();
        let rules = perms.rules();
        assert_eq!(rules.len(), 3, "{rules:?}");
        assert_eq!(rules[0].group, "");
        assert_eq!(
            rules[0].resources.iter().collect::<Vec<_>>(),
            ["configmaps", "pods"]
        );
        assert_eq!(rules[1].group, "apps");
        assert_eq!(
            rules[1].resources.iter().collect::<Vec<_>>(),
            ["deployments"]
        );
        assert_eq!(rules[1].verbs.len(), 7);
        assert_eq!(
            rules[2].resources.iter().collect::<Vec<_>>(),
            ["deployments/status"]
        );
        assert!(perms.allows("apps", "deployments", "delete"));
        assert!(!perms.allows("", "pods", "delete"));
    }

    #[test]
    fn finalizers_need_update_on_the_object_and_the_subresource() {
        let mut perms = Permissions::new();
        perms.uses_finalizers::<Pod>();
        assert!(perms.allows("", "pods/finalizers", "update"));
        assert!(perms.allows("", "pods", "patch"));
        let rule = perms.policy_rules();
        assert_eq!(rule.len(), 2);
        assert_eq!(rule[0].api_groups.as_deref(), Some(&[String::new()][..]));
    }
}
