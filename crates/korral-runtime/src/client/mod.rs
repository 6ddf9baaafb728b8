//! The client handed to reconcilers: reads from the manager's shared cache where the type is
//! cached, writes to the API server (controller-runtime's delegating client).
//!
//! A [`Client`] wraps a `kube::Client` and the manager's [`Cache`] (get it from
//! `Manager::cached_client`, or build one with [`Client::new`]):
//!
//! - **Reads** ([`Client::get`], [`Client::get_opt`], [`Client::list`]) come from the cache when
//!   a synced informer of the type covers the namespace asked for: the type is cached because a
//!   controller watches it (`for_`, `owns`, `watches_kind`) or because it was asked for up front
//!   ([`Client::cache_type`]). Otherwise they go to the API server (a list with the same
//!   selectors). An informer configured with label or field selectors holds a subset of the
//!   objects: a get that misses it and every list go to the server.
//! - **Writes** (create, replace, patch, status, delete, server-side apply, finalizers) always go
//!   to the API server.
//! - **Read your writes.** The client remembers the object each of its writes returned, until the
//!   cache holds that `resourceVersion` or a newer one (at most 30 s, 4096 objects). A cached read
//!   of a remembered object answers with the newer of the two: the write's answer when the cache
//!   is behind. So `create_or_update` twice in a row writes once, and a reconcile never acts on a
//!   copy older than its own write. After a delete, reads of that object go to the server until
//!   the cache has dropped it. Writes made with another client are not known: as with any cache,
//!   a conflict (409) then tells the writer to read again, and the helpers here re-read from the
//!   API server on conflict.
//! - **Create-or-update** ([`Client::create_or_update`], [`Client::create_or_patch`]) read the
//!   current object as above (from the server when the type's cache transform is not the default,
//!   so a lossy transform never loses data), take a fallible mutate function whose error comes
//!   back untouched with nothing written, and retry conflicts reading from the server.
//! - **Unstructured objects**: the `_with` methods take the runtime type of a
//!   [`DynamicObject`](kube::api::DynamicObject) (an [`ApiResource`](kube::api::ApiResource)),
//!   cached by [`Cache::dynamic_informer`].
//! - **Metadata only**: [`PartialObjectMeta<K>`] works everywhere a type does; its informers
//!   watch with kube's metadata-only requests and are cached apart from the full objects
//!   ([`Client::cache_metadata`], [`Client::list_metadata`]), as controller-runtime's
//!   `OnlyMetadata` for large kinds such as Secrets.
//! - **Request counts**: [`Client::request_counts`] says how many reads and writes reached the
//!   API server and how many reads the cache answered, across all clones of the client.
//!
//! On a real cluster each request costs a round trip of milliseconds: with the reads of cached
//! types answered from memory, a reconcile that finds nothing to change sends no request, and
//! one that changes something sends only its writes. That is what makes more concurrent
//! reconciles pay off (see the controller docs on `max_concurrent_reconciles`).
//!
//! ```no_run
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::Pod;
//! use korral_runtime::client::Client;
//! use korral_runtime::reconcile::ReconcileError;
//!
//! # async fn example(client: Client) -> Result<(), ReconcileError> {
//! let pods = client.list::<Pod>().namespace("default").labels([("app", "web")]).await?;
//! let mut default = Deployment::default();
//! default.metadata.name = Some("web".into());
//! default.metadata.namespace = Some("default".into());
//! let (_result, _stored) = client
//!     .create_or_update(default, |d: &mut Deployment| -> Result<(), ReconcileError> {
//!         d.spec.replicas = Some(i32::try_from(pods.len()).unwrap_or(i32::MAX) + 1);
//!         Ok(())
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```

mod finalize;
mod list;
mod scope;
mod upsert;
mod write;
mod written;

pub use list::List;
pub use scope::ApiScope;
pub use written::{MAX_ENTRIES, TTL};

use std::fmt::{self, Debug};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kube::Resource;
use kube::api::{ApiResource, DynamicObject};
use kube::core::{NamespaceScope, PartialObjectMeta};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cache::{Cache, CacheError, Filter, Informer, ParseFieldSelectorError, Scope, type_key};
use crate::metrics::{Counter, CounterVec, RegisterError, Registry};
use crate::reconcile::{ObjectRef, ReconcileError};
use written::{TrackKey, Verdict, Written, kind_of};

/// The types the cached client reads and writes: any kube [`Resource`] that can be sent and
/// received, static ([`k8s_openapi`] types, custom resources, [`PartialObjectMeta<K>`]) or
/// dynamic ([`DynamicObject`]).
pub trait Object:
    Resource<DynamicType: Clone, Scope: ApiScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Object for K where
    K: Resource<DynamicType: Clone, Scope: ApiScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// Why a read of the cached client failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Getting the object from the API server failed.
    #[error("getting {kind} {object}")]
    Get {
        /// The kind.
        kind: String,
        /// The object (`namespace/name`).
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The object does not exist (in the cache, which is current, or on the API server).
    #[error("getting {kind} {object}: not found")]
    NotFound {
        /// The kind.
        kind: String,
        /// The object (`namespace/name`).
        object: String,
    },
    /// Listing from the API server failed.
    #[error("listing {kind}")]
    List {
        /// The kind.
        kind: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The field selector of a list could not be parsed.
    #[error("listing {kind}")]
    ParseFieldSelector {
        /// The kind.
        kind: String,
        /// The parse error.
        #[source]
        source: ParseFieldSelectorError,
    },
}

impl ClientError {
    /// Whether the object was not found.
    pub fn is_not_found(&self) -> bool {
        match self {
            Self::NotFound { .. } => true,
            Self::Get { source, .. } => matches!(source, kube::Error::Api(s) if s.code == 404),
            _ => false,
        }
    }
}

/// A failed read is transient, except a field selector that does not parse (terminal).
impl From<ClientError> for ReconcileError {
    fn from(err: ClientError) -> Self {
        match err {
            ClientError::ParseFieldSelector { .. } => Self::terminal(err),
            _ => Self::transient(err),
        }
    }
}

/// How many requests the client sent to the API server, and how many reads the cache answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RequestCounts {
    /// Gets and lists sent to the API server.
    pub reads: u64,
    /// Creates, updates, patches, deletes and applies sent to the API server.
    pub writes: u64,
    /// Gets and lists answered from the cache (no request).
    pub cache_reads: u64,
}

impl RequestCounts {
    /// Every request sent to the API server (`reads + writes`).
    pub fn requests(&self) -> u64 {
        self.reads + self.writes
    }
}

/// What a request does, as the `verb` label of the client's metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verb {
    Get,
    List,
    Create,
    Update,
    Patch,
    Delete,
    Apply,
}

impl Verb {
    const ALL: [Self; 7] = [
        Self::Get,
        Self::List,
        Self::Create,
        Self::Update,
        Self::Patch,
        Self::Delete,
        Self::Apply,
    ];

    fn label(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::Apply => "apply",
        }
    }

    fn is_read(self) -> bool {
        matches!(self, Self::Get | Self::List)
    }
}

/// The name of the counter of requests the cached client sent, by `verb`.
pub const REQUESTS_METRIC: &str = "korral_client_requests_total";
/// The name of the counter of reads the cache answered, by `verb` (`get`, `list`).
pub const CACHE_READS_METRIC: &str = "korral_client_cache_reads_total";

/// The client's series, one per verb (indexed by `Verb as usize`).
struct Metrics {
    requests: Vec<Counter>,
    cache_reads: Vec<Counter>,
}

impl Metrics {
    fn register(registry: &Registry) -> Result<Self, RegisterError> {
        let requests = registry.counter_vec(
            REQUESTS_METRIC,
            "Requests the cached client sent to the API server, by verb.",
            &["verb"],
        )?;
        let cache_reads = registry.counter_vec(
            CACHE_READS_METRIC,
            "Reads of the cached client answered from the cache (no request), by verb.",
            &["verb"],
        )?;
        let series = |vec: &CounterVec| -> Vec<Counter> {
            Verb::ALL
                .iter()
                .map(|v| vec.with_label_values(&[v.label()]).unwrap_or_default())
                .collect()
        };
        Ok(Self {
            requests: series(&requests),
            cache_reads: series(&cache_reads),
        })
    }
}

#[derive(Default)]
struct Counters {
    reads: AtomicU64,
    writes: AtomicU64,
    cache_reads: AtomicU64,
}

struct Inner {
    kube: kube::Client,
    cache: Cache,
    counters: Counters,
    metrics: Option<Metrics>,
    written: Written,
}

/// The cached client; see the [module docs](self). Cheap to clone (clones share the cache, the
/// request counts and the memory of recent writes).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("request_counts", &self.request_counts())
            .finish_non_exhaustive()
    }
}

fn namespace_opt(namespace: &str) -> Option<&str> {
    (!namespace.is_empty()).then_some(namespace)
}

fn object_ref(namespace: Option<&str>, name: &str) -> ObjectRef {
    ObjectRef {
        namespace: namespace.map(str::to_owned),
        name: name.to_owned(),
    }
}

impl Client {
    /// A client writing through `kube` and reading from `cache` (which should read through the
    /// same cluster).
    pub fn new(kube: kube::Client, cache: Cache) -> Self {
        Self::build(kube, cache, None)
    }

    /// [`Client::new`], also counting requests in `registry` as
    /// `korral_client_requests_total{verb}` ([`REQUESTS_METRIC`]) and cache reads as
    /// `korral_client_cache_reads_total{verb}` ([`CACHE_READS_METRIC`]). Fails if those
    /// names are registered already (one cached client per registry).
    pub fn with_metrics(
        kube: kube::Client,
        cache: Cache,
        registry: &Registry,
    ) -> Result<Self, RegisterError> {
        let metrics = Metrics::register(registry)?;
        Ok(Self::build(kube, cache, Some(metrics)))
    }

    fn build(kube: kube::Client, cache: Cache, metrics: Option<Metrics>) -> Self {
        Self {
            inner: Arc::new(Inner {
                kube,
                cache,
                counters: Counters::default(),
                metrics,
                written: Written::default(),
            }),
        }
    }

    /// The kube client behind this one (for `Api<K>` calls of your own; they are not counted
    /// and not remembered for read-your-writes).
    pub fn kube_client(&self) -> &kube::Client {
        &self.inner.kube
    }

    /// The shared cache reads come from.
    pub fn shared_cache(&self) -> &Cache {
        &self.inner.cache
    }

    /// How many requests this client (and its clones) sent, and how many reads the cache
    /// answered.
    pub fn request_counts(&self) -> RequestCounts {
        let c = &self.inner.counters;
        RequestCounts {
            reads: c.reads.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            cache_reads: c.cache_reads.load(Ordering::Relaxed),
        }
    }

    /// How many written objects the client remembers for read-your-writes (bounded by
    /// [`MAX_ENTRIES`]; each goes once the cache has caught up with it, or after [`TTL`]).
    pub fn remembered_writes(&self) -> usize {
        self.inner.written.len()
    }

    /// Counts a request to the API server.
    pub(crate) fn count(&self, verb: Verb) {
        let c = &self.inner.counters;
        let total = if verb.is_read() { &c.reads } else { &c.writes };
        total.fetch_add(1, Ordering::Relaxed);
        if let Some(metrics) = &self.inner.metrics {
            metrics.requests[verb as usize].inc();
        }
    }

    /// Counts a read answered from the cache.
    fn count_cached(&self, verb: Verb) {
        self.inner
            .counters
            .cache_reads
            .fetch_add(1, Ordering::Relaxed);
        if let Some(metrics) = &self.inner.metrics {
            metrics.cache_reads[verb as usize].inc();
        }
    }

    /// Caches the namespaced type `K` on `scope` from now on (starting or sharing its informer),
    /// so reads of it come from the cache once the informer has synced.
    pub fn cache_type<K>(&self, scope: Scope) -> Result<Informer<K>, CacheError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::Scope: NamespaceScope,
    {
        self.inner.cache.informer::<K>(scope)
    }

    /// Caches only the metadata of the namespaced type `K` on `scope` (kube's metadata watcher:
    /// `PartialObjectMetadata` requests), for large kinds such as Secrets. Reads of
    /// [`PartialObjectMeta<K>`] come from it.
    pub fn cache_metadata<K>(
        &self,
        scope: Scope,
    ) -> Result<Informer<PartialObjectMeta<K>>, CacheError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::Scope: NamespaceScope,
    {
        self.inner.cache.informer::<PartialObjectMeta<K>>(scope)
    }

    /// Caches the unstructured objects of the kind `resource` on `scope`.
    pub fn cache_dynamic(
        &self,
        resource: &ApiResource,
        scope: Scope,
    ) -> Result<Informer<DynamicObject>, CacheError> {
        self.inner.cache.dynamic_informer(resource, scope)
    }

    /// The object `namespace/name` (empty namespace: cluster-scoped) from the cache or the
    /// server; `None` if it does not exist.
    pub async fn get_opt<K>(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<K>>, ClientError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        self.get_opt_with(&(), namespace, name).await
    }

    /// [`Client::get_opt`], failing with [`ClientError::NotFound`] if absent.
    pub async fn get<K>(&self, namespace: &str, name: &str) -> Result<Arc<K>, ClientError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        self.get_with(&(), namespace, name).await
    }

    /// [`Client::get_opt`] for a type known at run time (`dt`: an [`ApiResource`] for
    /// [`DynamicObject`]).
    pub async fn get_opt_with<K: Object>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<K>>, ClientError> {
        let ns = namespace_opt(namespace);
        self.read(dt, ns, name, false)
            .await
            .map_err(|source| ClientError::Get {
                kind: K::kind(dt).into_owned(),
                object: object_ref(ns, name).to_string(),
                source,
            })
    }

    /// [`Client::get`] for a type known at run time.
    pub async fn get_with<K: Object>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, ClientError> {
        self.get_opt_with(dt, namespace, name)
            .await?
            .ok_or_else(|| ClientError::NotFound {
                kind: K::kind(dt).into_owned(),
                object: object_ref(namespace_opt(namespace), name).to_string(),
            })
    }

    /// The unstructured object `namespace/name` of the kind `resource`; `None` if absent.
    pub async fn get_dynamic_opt(
        &self,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<DynamicObject>>, ClientError> {
        self.get_opt_with(resource, namespace, name).await
    }

    /// A list query on `K`; see [`List`].
    pub fn list<K>(&self) -> List<K>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        List::new(self.clone(), ())
    }

    /// A list query on the metadata of `K` ([`PartialObjectMeta<K>`]).
    pub fn list_metadata<K>(&self) -> List<PartialObjectMeta<K>>
    where
        K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
        PartialObjectMeta<K>: Object + Resource<DynamicType = ()>,
    {
        List::new(self.clone(), ())
    }

    /// A list query on the unstructured objects of the kind `resource`.
    pub fn list_dynamic(&self, resource: &ApiResource) -> List<DynamicObject> {
        List::new(self.clone(), resource.clone())
    }

    /// A list query on a type known at run time.
    pub fn list_with<K: Object>(&self, dt: &K::DynamicType) -> List<K> {
        List::new(self.clone(), dt.clone())
    }

    /// Reads one object: from the cache when it is current for it, else from the server.
    /// `for_write`: the object is about to be written back, so a cache with a custom transform
    /// is not used.
    async fn read<K: Object>(
        &self,
        dt: &K::DynamicType,
        namespace: Option<&str>,
        name: &str,
        for_write: bool,
    ) -> Result<Option<Arc<K>>, kube::Error> {
        let key = object_ref(namespace, name);
        if let Some(found) = self.inner.cache.find::<K>(&type_key::<K>(dt), namespace)
            && !(for_write && found.custom_transform)
        {
            let cached = found.informer.get(&key);
            let track = TrackKey::new::<K>(dt, key);
            match self.inner.written.check::<K>(&track, cached.as_deref()) {
                Verdict::Cache if cached.is_some() || !found.restricted => {
                    self.count_cached(Verb::Get);
                    return Ok(cached);
                }
                Verdict::Written(obj) => {
                    self.count_cached(Verb::Get);
                    return Ok(Some(obj));
                }
                Verdict::Cache | Verdict::Server => {}
            }
        }
        self.read_from_server(dt, namespace, name).await
    }

    async fn read_from_server<K: Object>(
        &self,
        dt: &K::DynamicType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Arc<K>>, kube::Error> {
        let api = K::Scope::api::<K>(self.inner.kube.clone(), dt, namespace);
        self.count(Verb::Get);
        Ok(api.get_opt(name).await?.map(Arc::new))
    }

    /// The list of `filter` from the cache with the client's writes laid over it, or `None` when
    /// the cache cannot answer (not cached, restricted by selectors, or an object needs the
    /// server).
    pub(crate) fn list_cached<K: Object>(
        &self,
        dt: &K::DynamicType,
        filter: &Filter,
    ) -> Option<Vec<Arc<K>>> {
        let namespace = filter.namespace.as_deref();
        let found = self.inner.cache.find::<K>(&type_key::<K>(dt), namespace)?;
        if found.restricted {
            return None;
        }
        let mut items: Vec<Arc<K>> = filter.select(&found.informer);
        for track in self.inner.written.keys_of(&kind_of::<K>(dt), namespace) {
            let key = Written::object_ref(&track).clone();
            let cached = found.informer.get(&key);
            match self.inner.written.check::<K>(&track, cached.as_deref()) {
                Verdict::Cache => {}
                Verdict::Server => return None,
                Verdict::Written(obj) => {
                    items.retain(|o| ObjectRef::from_object(o.as_ref()).as_ref() != Some(&key));
                    if filter.matches(obj.as_ref()) {
                        items.push(obj);
                    }
                }
            }
        }
        self.count_cached(Verb::List);
        Some(items)
    }
}
