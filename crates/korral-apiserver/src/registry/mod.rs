//! The resource registry: which resources the server serves, built-in and from CRDs.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

/// How an object's `metadata.name` is validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// An RFC 1123 subdomain (most kinds).
    Subdomain,
    /// An RFC 1123 label (namespaces, services).
    Label,
    /// Any path segment (RBAC kinds: `system:controller:foo` is allowed).
    PathSegment,
}

/// Where a scale subresource reads and writes replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// JSON path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// JSON path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas: String,
    /// JSON path of the label selector string, if any.
    pub label_selector: Option<String>,
}

/// A printer column of a CRD (`additionalPrinterColumns`).
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type of the column.
    pub column_type: String,
    /// OpenAPI format.
    pub format: Option<String>,
    /// Human-readable description.
    pub description: Option<String>,
    /// Priority: 0 shows by default, higher only with `-o wide`.
    pub priority: i64,
    /// JSONPath into the object.
    pub json_path: String,
}

/// Everything the server knows about a custom resource version.
#[derive(Debug, Clone)]
pub struct CustomResourceInfo {
    /// Name of the defining CRD, `<plural>.<group>`.
    pub crd_name: String,
    /// The validation schema (`openAPIV3Schema`), if any.
    pub schema: Option<Arc<Value>>,
    /// Printer columns.
    pub printer_columns: Vec<PrinterColumn>,
    /// The CRD's versions and how objects convert between them.
    pub versions: Arc<crate::conversion::CrdVersions>,
    /// The `Warning` every request to this version gets, when it is deprecated.
    pub deprecation: Option<String>,
}

impl CustomResourceInfo {
    /// Whether `version` is the version its CRD stores objects in.
    pub fn is_storage(&self, version: &str) -> bool {
        self.versions.storage_version == version
    }
}

/// One served resource in one group version.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    /// API group (`""` for core).
    pub group: String,
    /// API version (`v1`).
    pub version: String,
    /// Plural resource name (`deployments`).
    pub resource: String,
    /// Singular name (`deployment`).
    pub singular: String,
    /// Kind (`Deployment`).
    pub kind: String,
    /// `ListKind` (`DeploymentList`).
    pub list_kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Verbs on the collection and the object.
    pub verbs: Vec<String>,
    /// Has a `/status` subresource.
    pub status_subresource: bool,
    /// Has a `/scale` subresource.
    pub scale: Option<ScalePaths>,
    /// Name validation rule.
    pub name_rule: NameRule,
    /// Whether `metadata.generation` tracks changes outside metadata and status.
    pub tracks_generation: bool,
    /// Whether a delete that removes an object answers with the object (upstream's
    /// `ReturnDeletedObject`: pods, services, service accounts, storage classes, custom
    /// resources) rather than a `Status`.
    pub returns_deleted_object: bool,
    /// Field selectors supported beyond `metadata.name` and `metadata.namespace`.
    pub field_selectors: Vec<String>,
    /// Present for custom resources.
    pub custom: Option<CustomResourceInfo>,
    /// Where its objects hold a pod spec (`spec.template.spec`), for pods and their controllers.
    pub(crate) pod_spec: Option<&'static str>,
    /// Lists only this kind has that merge by key or as sets (built-in kinds).
    pub(crate) lists: &'static [crate::kinds::lists::ListAt],
    /// Fields patched with `retainKeys` or `replace` (built-in kinds).
    pub(crate) patch_directives: &'static [crate::kinds::lists::DirectiveAt],
    /// Create-only subresources acting on an object (`pods/eviction`).
    pub(crate) actions: Vec<crate::kinds::actions::Action>,
    /// Subresources served by reaching a node or pod (`pods/log`, `services/proxy`).
    pub(crate) connecters: Vec<crate::kinds::connect::Connecter>,
    /// The version upstream stores a built-in kind in when it differs from the preferred one
    /// serving it (for discovery's `storageVersionHash`).
    pub(crate) upstream_storage_version: Option<&'static str>,
    /// The `Warning` every request to a deprecated built-in resource gets.
    pub(crate) deprecation: Option<&'static str>,
    /// How objects print as a `Table` (built-in kinds; custom resources use their CRD's
    /// printer columns).
    pub(crate) printer: crate::kinds::Printer,
    /// What the kind decides in the write pipeline.
    pub(crate) strategy: std::sync::Arc<dyn crate::kinds::Strategy>,
}

impl ResourceInfo {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The `(group, resource)` its objects are stored under: its own, or the resource its
    /// kind's strategy names (one resource served by two groups, see
    /// [`crate::kinds::Strategy::stored_as`]).
    pub fn storage_identity(&self) -> (&str, &str) {
        self.strategy
            .stored_as()
            .unwrap_or((&self.group, &self.resource))
    }

    /// The deprecation `Warning` requests to this resource get: a deprecated custom resource
    /// version's or a deprecated built-in resource's.
    pub fn deprecation_warning(&self) -> Option<String> {
        match &self.custom {
            Some(custom) => custom.deprecation.clone(),
            None => self.deprecation.map(str::to_string),
        }
    }

    /// Whether the resource accepts `verb`.
    pub fn allows(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Whether this is a custom resource.
    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }
}

/// The standard verbs of a fully writable resource.
pub fn standard_verbs() -> Vec<String> {
    [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

type ResourceKey = (String, String, String);

#[derive(Default)]
struct Tables {
    /// (group, version, resource) → info.
    resources: BTreeMap<ResourceKey, Arc<ResourceInfo>>,
    /// Group order for discovery (built-ins first, then CRD groups by name).
    builtin_groups: Vec<(String, Vec<String>)>,
    /// CRD name → the (group, version, resource) keys it registered, and its group's version order.
    crds: BTreeMap<String, (String, Vec<ResourceKey>, Vec<String>)>,
}

/// The set of resources served, shared by every request.
#[derive(Default)]
pub struct Registry {
    tables: RwLock<Tables>,
    /// The built OpenAPI documents of this server's resources (per server, never shared
    /// between servers in one process).
    openapi: crate::openapi::OpenApiCache,
    /// Compiled CEL programs of this server's CRDs.
    cel: crate::validation::cel::compile::CelCache,
    /// Compiled schema `pattern`s of this server's CRDs.
    patterns: Arc<crate::validation::schema::PatternCache>,
}

impl Registry {
    /// This registry's cache of built OpenAPI documents.
    pub(crate) fn openapi_cache(&self) -> &crate::openapi::OpenApiCache {
        &self.openapi
    }

    /// This registry's cache of compiled CEL programs.
    pub(crate) fn cel_cache(&self) -> &crate::validation::cel::compile::CelCache {
        &self.cel
    }

    /// This registry's cache of compiled schema `pattern`s.
    pub(crate) fn pattern_cache(&self) -> &Arc<crate::validation::schema::PatternCache> {
        &self.patterns
    }

    /// A registry with every built-in resource.
    pub fn with_builtins() -> Self {
        let registry = Self::default();
        {
            let mut tables = registry.write();
            for info in crate::kinds::builtin_resources() {
                let key = (
                    info.group.clone(),
                    info.version.clone(),
                    info.resource.clone(),
                );
                // Versions in the order the kinds declare them: the preferred one first.
                match tables
                    .builtin_groups
                    .iter_mut()
                    .find(|(g, _)| g == &info.group)
                {
                    Some((_, versions)) if !versions.contains(&info.version) => {
                        versions.push(info.version.clone());
                    }
                    Some(_) => {}
                    None => tables
                        .builtin_groups
                        .push((info.group.clone(), vec![info.version.clone()])),
                }
                tables.resources.insert(key, Arc::new(info));
            }
        }
        registry
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tables> {
        self.tables.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tables> {
        self.tables.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The resource served at `group/version/resource`.
    pub fn get(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceInfo>> {
        self.read()
            .resources
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
            .cloned()
    }

    /// The resource of a kind in a group version.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        self.read()
            .resources
            .values()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }

    /// Every version of a resource in a group (for storage keys shared across versions).
    pub fn versions_of(&self, group: &str, resource: &str) -> Vec<Arc<ResourceInfo>> {
        self.read()
            .resources
            .values()
            .filter(|r| r.group == group && r.resource == resource)
            .cloned()
            .collect()
    }

    /// Every group with its versions, preferred version first, in discovery order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let tables = self.read();
        let mut groups = tables.builtin_groups.clone();
        let mut custom: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (group, _, order) in tables.crds.values() {
            let entry = custom.entry(group.clone()).or_default();
            for v in order {
                if !entry.contains(v) {
                    entry.push(v.clone());
                }
            }
        }
        for (group, mut versions) in custom {
            versions.sort_by(|a, b| compare_versions(b, a));
            groups.push((group, versions));
        }
        groups
    }

    /// Every resource of one group version, sorted by name.
    pub fn resources_in(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        self.read()
            .resources
            .values()
            .filter(|r| r.group == group && r.version == version)
            .cloned()
            .collect()
    }

    /// Every served resource.
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.read().resources.values().cloned().collect()
    }

    /// Registers (or replaces) the resources of a CRD.
    pub fn put_crd(&self, crd_name: &str, infos: Vec<ResourceInfo>) {
        let mut tables = self.write();
        if let Some((_, keys, _)) = tables.crds.remove(crd_name) {
            for key in keys {
                tables.resources.remove(&key);
            }
        }
        let Some(group) = infos.first().map(|i| i.group.clone()) else {
            return;
        };
        let mut keys = Vec::new();
        let mut order = Vec::new();
        for info in infos {
            let key = (
                info.group.clone(),
                info.version.clone(),
                info.resource.clone(),
            );
            order.push(info.version.clone());
            tables.resources.insert(key.clone(), Arc::new(info));
            keys.push(key);
        }
        tables
            .crds
            .insert(crd_name.to_string(), (group, keys, order));
    }

    /// Unregisters the resources of a CRD.
    pub fn remove_crd(&self, crd_name: &str) {
        let mut tables = self.write();
        if let Some((_, keys, _)) = tables.crds.remove(crd_name) {
            for key in keys {
                tables.resources.remove(&key);
            }
        }
    }

    /// Whether a group/resource pair is claimed by a built-in or another CRD than `crd_name`.
    pub fn plural_taken(&self, group: &str, resource: &str, crd_name: &str) -> bool {
        let tables = self.read();
        tables.resources.values().any(|r| {
            r.group == group
                && r.resource == resource
                && r.custom.as_ref().is_none_or(|c| c.crd_name != crd_name)
        })
    }
}

/// Orders Kubernetes versions as upstream does: GA > beta > alpha, then by number
/// (`v2 > v1 > v1beta2 > v1beta1 > v1alpha1`); non-conforming versions sort last by name.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (level, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, level, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => la.cmp(&lb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
        (Some(_), None) => std::cmp::Ordering::Greater,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_priority_matches_upstream() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta1", "v2", "foo"];
        v.sort_by(|a, b| compare_versions(b, a));
        assert_eq!(v, vec!["v2", "v1", "v2beta1", "v1beta1", "v1alpha1", "foo"]);
    }

    #[test]
    fn builtins_are_registered() {
        let registry = Registry::with_builtins();
        let deploy = registry
            .get("apps", "v1", "deployments")
            .expect("deployments");
        assert_eq!(deploy.kind, "Deployment");
        assert!(deploy.status_subresource);
        assert!(deploy.scale.is_some());
        assert!(
            registry
                .get("", "v1", "namespaces")
                .is_some_and(|n| !n.namespaced)
        );
        assert!(registry.get("", "v1", "nothing").is_none());
    }
}
