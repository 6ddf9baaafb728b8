//! Typed queries on cached objects: by namespace, labels, fields and owner, as
//! controller-runtime's `List(ctx, list, InNamespace(ns), MatchingLabels(l), ...)`.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use kube::Resource;
use kube::core::{Expression, Selector, SelectorExt};
use serde::Serialize;
use serde_json::Value;

use super::{Cache, CacheError, Informer};

/// Anything that names a label selector: a [`Selector`], an [`Expression`], or a map of labels
/// that must all match (`matchLabels`).
pub trait IntoSelector {
    /// The selector.
    fn into_selector(self) -> Selector;
}

impl IntoSelector for Selector {
    fn into_selector(self) -> Selector {
        self
    }
}

impl IntoSelector for Expression {
    fn into_selector(self) -> Selector {
        self.into()
    }
}

impl IntoSelector for BTreeMap<String, String> {
    fn into_selector(self) -> Selector {
        self.into_iter().collect()
    }
}

impl IntoSelector for &BTreeMap<String, String> {
    fn into_selector(self) -> Selector {
        self.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

impl<const N: usize> IntoSelector for [(&str, &str); N] {
    fn into_selector(self) -> Selector {
        self.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }
}

/// Why a field selector is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parsing field selector {input:?}: expected `field=value` or `field!=value` terms")]
pub struct ParseFieldSelectorError {
    /// The rejected input.
    pub input: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    path: String,
    equal: bool,
    value: String,
}

/// A field selector (`metadata.name=x,status.phase!=Running`), evaluated on cached objects as
/// the API server does: every term must hold, a missing field reads as the empty string, and
/// non-string values compare by their JSON text (`true`, `3`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `a=b,c==d,e!=f` (empty terms are ignored).
    pub fn parse(input: &str) -> Result<Self, ParseFieldSelectorError> {
        let err = || ParseFieldSelectorError {
            input: input.to_owned(),
        };
        let mut terms = Vec::new();
        for term in input.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (path, equal, value) = if let Some((p, v)) = term.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = term.split_once("==") {
                (p, true, v)
            } else if let Some((p, v)) = term.split_once('=') {
                (p, true, v)
            } else {
                return Err(err());
            };
            let path = path.trim();
            if path.is_empty() || path.contains(['=', '!']) {
                return Err(err());
            }
            terms.push(FieldRequirement {
                path: path.to_owned(),
                equal,
                value: value.trim().to_owned(),
            });
        }
        Ok(Self { terms })
    }

    /// Whether every term holds on `obj`.
    pub fn matches<K: Resource + Serialize>(&self, obj: &K) -> bool {
        if self.terms.is_empty() {
            return true;
        }
        let mut json: Option<Value> = None;
        self.terms.iter().all(|term| {
            let meta = obj.meta();
            let actual = match term.path.as_str() {
                "metadata.name" => meta.name.clone().unwrap_or_default(),
                "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
                path => {
                    let json = json
                        .get_or_insert_with(|| serde_json::to_value(obj).unwrap_or(Value::Null));
                    field_text(json, path)
                }
            };
            (actual == term.value) == term.equal
        })
    }
}

/// The text of the field at the dotted `path` of `json` (empty when absent).
fn field_text(json: &Value, path: &str) -> String {
    let mut at = json;
    for part in path.split('.') {
        match at.get(part) {
            Some(next) => at = next,
            None => return String::new(),
        }
    }
    match at {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let terms: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                let op = if t.equal { "=" } else { "!=" };
                format!("{}{op}{}", t.path, t.value)
            })
            .collect();
        f.write_str(&terms.join(","))
    }
}

/// What a list query asks for: every set part must match.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only objects of this namespace (`None`: every namespace).
    pub namespace: Option<String>,
    /// Only objects whose labels match.
    pub labels: Option<Selector>,
    /// Only objects whose fields match.
    pub fields: Option<FieldSelector>,
    /// Only objects with an ownerReference to this uid.
    pub owner_uid: Option<String>,
}

impl Filter {
    /// Whether `obj` passes every part of the filter.
    pub fn matches<K: Resource + Serialize>(&self, obj: &K) -> bool {
        let meta = obj.meta();
        if let Some(ns) = &self.namespace
            && meta.namespace.as_deref() != Some(ns.as_str())
        {
            return false;
        }
        if let Some(selector) = &self.labels {
            let empty = BTreeMap::new();
            if !selector.matches(meta.labels.as_ref().unwrap_or(&empty)) {
                return false;
            }
        }
        if let Some(uid) = &self.owner_uid
            && !meta
                .owner_references
                .iter()
                .flatten()
                .any(|o| &o.uid == uid)
        {
            return false;
        }
        self.fields.as_ref().is_none_or(|f| f.matches(obj))
    }

    /// The objects of `informer` that pass the filter (the owner part through the informer's
    /// owner index).
    pub fn select<K>(&self, informer: &Informer<K>) -> Vec<Arc<K>>
    where
        K: Resource + Serialize + Clone + Send + Sync + 'static,
    {
        let candidates = match &self.owner_uid {
            Some(uid) => informer.list_owned_by(uid),
            None => informer.list(),
        };
        candidates
            .into_iter()
            .filter(|o| self.matches(o.as_ref()))
            .collect()
    }
}

/// A query on the cached objects of `K`, from [`Cache::list`]: set what to match, then
/// [`CacheList::items`]. It reads a running, synced informer whose scope covers the namespace
/// asked for (all namespaces when none is set) and never asks the API server.
///
/// ```no_run
/// # use k8s_openapi::api::core::v1::Pod;
/// # use korral_runtime::cache::Cache;
/// # fn example(cache: &Cache) -> Result<(), korral_runtime::cache::CacheError> {
/// let pods = cache
///     .list::<Pod>()
///     .namespace("default")
///     .labels([("app", "memcached")])
///     .items()?;
/// # let _ = pods;
/// # Ok(())
/// # }
/// ```
pub struct CacheList<K> {
    cache: Cache,
    key: String,
    filter: Filter,
    fields: Option<String>,
    _type: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for CacheList<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheList")
            .field("type", &self.key)
            .field("filter", &self.filter)
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

impl<K> CacheList<K>
where
    K: Resource + Serialize + Clone + Send + Sync + 'static,
{
    pub(crate) fn new(cache: Cache, key: String) -> Self {
        Self {
            cache,
            key,
            filter: Filter::default(),
            fields: None,
            _type: PhantomData,
        }
    }

    /// Only objects of the namespace `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.filter.namespace = Some(namespace.into());
        self
    }

    /// Only objects whose labels match `selector` (a [`Selector`], or a map of labels).
    pub fn labels(mut self, selector: impl IntoSelector) -> Self {
        self.filter.labels = Some(selector.into_selector());
        self
    }

    /// Only objects whose fields match the field selector `selector` (`spec.nodeName=n1`).
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.fields = Some(selector.into());
        self
    }

    /// Only objects with an ownerReference to `owner` (by uid; an owner without a uid owns
    /// nothing).
    pub fn owned_by<O: Resource>(mut self, owner: &O) -> Self {
        self.filter.owner_uid = Some(owner.meta().uid.clone().unwrap_or_default());
        self
    }

    /// The matching cached objects, in no particular order.
    pub fn items(mut self) -> Result<Vec<Arc<K>>, CacheError> {
        if let Some(fields) = self.fields.take() {
            let parsed =
                FieldSelector::parse(&fields).map_err(|source| CacheError::ParseFieldSelector {
                    gvk: self.key.clone(),
                    source,
                })?;
            self.filter.fields = Some(parsed);
        }
        let found = self
            .cache
            .find::<K>(&self.key, self.filter.namespace.as_deref())
            .ok_or_else(|| CacheError::NotCached {
                gvk: self.key.clone(),
                namespace: self
                    .filter
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "all namespaces".to_owned()),
            })?;
        Ok(self.filter.select(&found.informer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, PodSpec};
    use kube::api::ObjectMeta;

    fn pod(name: &str, node: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(str::to_owned),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn field_selectors_parse_and_match_like_the_api_server() {
        let sel = FieldSelector::parse("spec.nodeName=n1, metadata.name!=b").expect("parse");
        assert_eq!(sel.to_string(), "spec.nodeName=n1,metadata.name!=b");
        assert!(sel.matches(&pod("a", Some("n1"))));
        assert!(!sel.matches(&pod("b", Some("n1"))));
        assert!(!sel.matches(&pod("a", Some("n2"))));
        // A missing field reads as the empty string.
        let unscheduled = FieldSelector::parse("spec.nodeName=").expect("parse");
        assert!(unscheduled.matches(&pod("a", None)));
        assert!(!unscheduled.matches(&pod("a", Some("n1"))));
        assert!(
            FieldSelector::parse("metadata.name==a")
                .expect("==")
                .matches(&pod("a", None))
        );
        for bad in ["name", "=x", " != y"] {
            assert!(FieldSelector::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn filters_combine_namespace_labels_and_owner() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let mut p = pod("a", None);
        p.metadata.labels = Some(BTreeMap::from([("app".to_owned(), "x".to_owned())]));
        p.metadata.owner_references = Some(vec![OwnerReference {
            uid: "u1".into(),
            ..OwnerReference::default()
        }]);
        let mut filter = Filter {
            namespace: Some("ns".into()),
            labels: Some([("app", "x")].into_selector()),
            owner_uid: Some("u1".into()),
            ..Filter::default()
        };
        assert!(filter.matches(&p));
        filter.owner_uid = Some("u2".into());
        assert!(!filter.matches(&p));
        filter.owner_uid = None;
        filter.namespace = Some("other".into());
        assert!(!filter.matches(&p));
    }
}
