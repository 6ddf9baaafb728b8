//! Typed list queries of the cached client: from the cache when the type is cached, from the
//! API server with the same selectors otherwise.

use std::fmt::{self, Debug};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use kube::Resource;
use kube::api::ListParams;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ApiScope, Client, ClientError, Verb};
use crate::cache::{FieldSelector, Filter, IntoSelector};

/// A list query of the cached client, from [`Client::list`]: set what to match, then `.await`
/// it for the matching objects (`Vec<Arc<K>>`, in no particular order).
///
/// It reads the manager's cache when a synced informer of `K` without selectors covers the
/// namespace asked for (every namespace when none is set), with the client's own recent
/// writes laid over it (see [`Client`]); otherwise it lists from the API server with the same
/// namespace, label and field selectors (the owner is filtered on the answer).
///
/// ```no_run
/// # use k8s_openapi::api::core::v1::Pod;
/// # async fn example(client: korral_runtime::client::Client) -> Result<(), korral_runtime::client::ClientError> {
/// let pods = client
///     .list::<Pod>()
///     .namespace("default")
///     .labels([("app", "memcached")])
///     .await?;
/// # let _ = pods;
/// # Ok(())
/// # }
/// ```
pub struct List<K: Resource> {
    client: Client,
    dt: K::DynamicType,
    filter: Filter,
    fields: Option<String>,
}

impl<K: Resource> Debug for List<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("List")
            .field("filter", &self.filter)
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

impl<K> List<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
    K::DynamicType: Clone,
    K::Scope: ApiScope,
{
    pub(crate) fn new(client: Client, dt: K::DynamicType) -> Self {
        Self {
            client,
            dt,
            filter: Filter::default(),
            fields: None,
        }
    }

    /// Only objects of the namespace `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.filter.namespace = Some(namespace.into());
        self
    }

    /// Only objects whose labels match `selector` (a [`kube::core::Selector`], or a map of
    /// labels that must all match).
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

    async fn run(mut self) -> Result<Vec<Arc<K>>, ClientError> {
        let kind = K::kind(&self.dt).into_owned();
        if let Some(fields) = &self.fields {
            let parsed =
                FieldSelector::parse(fields).map_err(|source| ClientError::ParseFieldSelector {
                    kind: kind.clone(),
                    source,
                })?;
            self.filter.fields = Some(parsed);
        }
        if let Some(items) = self.client.list_cached::<K>(&self.dt, &self.filter) {
            return Ok(items);
        }
        let mut params = ListParams::default();
        if let Some(selector) = &self.filter.labels
            && !selector.selects_all()
        {
            params = params.labels(&selector.to_string());
        }
        if let Some(fields) = &self.fields {
            params = params.fields(fields);
        }
        let api = K::Scope::api::<K>(
            self.client.kube_client().clone(),
            &self.dt,
            self.filter.namespace.as_deref(),
        );
        self.client.count(Verb::List);
        let listed = api
            .list(&params)
            .await
            .map_err(|source| ClientError::List { kind, source })?;
        let owner = self.filter.owner_uid.as_deref();
        Ok(listed
            .items
            .into_iter()
            .filter(|o| {
                owner.is_none_or(|uid| {
                    o.meta()
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|r| r.uid == uid)
                })
            })
            .map(Arc::new)
            .collect())
    }
}

impl<K> IntoFuture for List<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
    K::DynamicType: Clone,
    K::Scope: ApiScope,
{
    type Output = Result<Vec<Arc<K>>, ClientError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}
