//! Shared caches: one list+watch per type and scope per manager, whatever the number of
//! controllers reading it.
//!
//! A [`Cache`] hands out [`Informer`] handles. Repeated calls for the same type (by
//! group/version/kind) and [`Scope`] return handles on the same store, fed by the same watch,
//! which is started on first use. Each informer:
//!
//! - runs kube's [`watcher`](kube::runtime::watcher()) with the default backoff, so it recovers
//!   from errors and from `410 Gone` by relisting (a relist emits only the differences);
//! - applies a transform to each object before storing it (by default
//!   [`drop_managed_fields`]; see [`TypeOptions`], set per type with [`Cache::configure`],
//!   together with label and field selectors);
//! - answers reads from memory: [`Informer::get`], [`Informer::list`],
//!   [`Informer::list_by_label`] and [`Informer::list_owned_by`] (an ownerReferences index kept
//!   up to date incrementally), and typed queries across informers with [`Cache::list`]
//!   (`cache.list::<Pod>().namespace(ns).labels(l).owned_by(&o).items()`, see [`CacheList`]);
//! - caches unstructured objects ([`Cache::dynamic_informer`]) and metadata only (an informer of
//!   [`PartialObjectMeta<K>`](kube::core::PartialObjectMeta), kept apart from `K`'s);
//! - broadcasts [`CacheEvent`]s with the new and the previous object ([`Informer::subscribe`]).
//!
//! Everything stops on [`Cache::shutdown`], on the shutdown future given to
//! [`Cache::with_shutdown`], or when the [`Cache`] and all its clones are dropped.
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use korral_runtime::cache::{Cache, Scope};
//! use korral_runtime::reconcile::ObjectRef;
//!
//! # async fn example(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let cache = Cache::new(client);
//! let configmaps = cache.informer::<ConfigMap>(Scope::namespace("default"))?;
//! cache.wait_for_sync().await?;
//! let cfg = configmaps.get(&ObjectRef::namespaced("default", "settings"));
//! # let _ = cfg;
//! # Ok(())
//! # }
//! ```

mod informer;
mod query;

use std::any::Any;
use std::collections::{BTreeSet, HashMap};
use std::fmt::{self, Debug};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::NamespaceScope;
use kube::runtime::watcher;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tracing::info;

pub use informer::{EVENT_CAPACITY, Informer};
use informer::{Shared, run_stream};
pub use query::{CacheList, FieldSelector, Filter, IntoSelector, ParseFieldSelectorError};

/// A hook applied to every object before it is stored (and before it is compared or emitted).
pub type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// The default transform: drops `metadata.managedFields`, which controllers rarely read and
/// which often make up most of an object's size.
pub fn drop_managed_fields<K: Resource>(obj: &mut K) {
    obj.meta_mut().managed_fields = None;
}

/// Which namespaces an informer watches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Every namespace (and the only scope of cluster-scoped types).
    All,
    /// One namespace.
    Namespace(String),
    /// A set of namespaces: one watch per namespace, feeding one store. An empty set watches
    /// nothing (and is synced at once).
    Namespaces(BTreeSet<String>),
}

impl Scope {
    /// [`Scope::Namespace`].
    pub fn namespace(ns: impl Into<String>) -> Self {
        Self::Namespace(ns.into())
    }

    /// [`Scope::Namespaces`] from any list of names.
    pub fn namespaces<I, S>(namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Namespaces(namespaces.into_iter().map(Into::into).collect())
    }

    fn partitions(&self) -> Vec<Option<String>> {
        match self {
            Self::All => vec![None],
            Self::Namespace(ns) => vec![Some(ns.clone())],
            Self::Namespaces(set) => set.iter().cloned().map(Some).collect(),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all namespaces"),
            Self::Namespace(ns) => write!(f, "namespace {ns}"),
            Self::Namespaces(set) => {
                let names: Vec<&str> = set.iter().map(String::as_str).collect();
                write!(f, "namespaces {}", names.join(","))
            }
        }
    }
}

/// The kind of a [`CacheEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// An object appeared in the cache.
    Added,
    /// A cached object changed (`previous` holds the old version).
    Modified,
    /// An object left the cache (`previous` holds the last cached version, if any).
    Deleted,
}

/// A change in an informer's cache.
#[derive(Debug)]
pub struct CacheEvent<K> {
    /// What happened.
    pub kind: EventKind,
    /// The object now (for `Deleted`: its final state as reported by the API server, or the
    /// last cached version after a relist).
    pub object: Arc<K>,
    /// The cached version before the change: `None` for `Added`.
    pub previous: Option<Arc<K>>,
}

impl<K> Clone for CacheEvent<K> {
    fn clone(&self) -> Self {
        Self {
            kind: self.kind,
            object: Arc::clone(&self.object),
            previous: self.previous.clone(),
        }
    }
}

/// Per-type options of the informers of a [`Cache`]: selectors and transform.
pub struct TypeOptions<K> {
    /// A label selector passed to the API server (`key=value,other!=x`).
    pub label_selector: Option<String>,
    /// A field selector passed to the API server (`metadata.name=x`).
    pub field_selector: Option<String>,
    /// The transform applied before storing (default: [`drop_managed_fields`]).
    pub transform: Transform<K>,
    /// Whether `transform` is not the default (set by [`TypeOptions::with_transform`]). The
    /// cached client then reads an object it is about to write back (create-or-update,
    /// create-or-patch) from the API server, so a transform that drops data never loses it.
    pub custom_transform: bool,
}

impl<K: Resource + 'static> Default for TypeOptions<K> {
    fn default() -> Self {
        Self {
            label_selector: None,
            field_selector: None,
            transform: Arc::new(drop_managed_fields::<K>),
            custom_transform: false,
        }
    }
}

impl<K> Clone for TypeOptions<K> {
    fn clone(&self) -> Self {
        Self {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            transform: Arc::clone(&self.transform),
            custom_transform: self.custom_transform,
        }
    }
}

impl<K> Debug for TypeOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypeOptions")
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("custom_transform", &self.custom_transform)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + 'static> TypeOptions<K> {
    /// Sets the label selector.
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Sets the field selector.
    pub fn with_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Replaces the transform (the default, [`drop_managed_fields`], is not applied any more;
    /// call it from `transform` to keep it).
    pub fn with_transform(mut self, transform: impl Fn(&mut K) + Send + Sync + 'static) -> Self {
        self.transform = Arc::new(transform);
        self.custom_transform = true;
        self
    }
}

/// Why a cache step failed.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Another Rust type with the same group/version/kind already has an informer on this scope.
    #[error("getting the informer for {gvk} ({scope}): it was started for another Rust type")]
    InformerType {
        /// `group/version/kind` of the type.
        gvk: String,
        /// The scope asked for.
        scope: Scope,
    },
    /// Starting a watch needs a Tokio runtime, and there was none.
    #[error("starting the informer for {gvk}: no Tokio runtime")]
    StartInformer {
        /// `group/version/kind` of the type.
        gvk: String,
    },
    /// Watching the shutdown future needs a Tokio runtime, and there was none.
    #[error("starting the shutdown watch of the cache: no Tokio runtime")]
    StartShutdownWatch,
    /// The cache shut down before the informer synced.
    #[error("waiting for informer {informer} to sync: the cache shut down")]
    WaitSync {
        /// The informer's type and scope.
        informer: String,
    },
    /// Configuring a type after its informers started has no effect.
    #[error("configuring {gvk}: an informer for it has already started")]
    Configure {
        /// `group/version/kind` of the type.
        gvk: String,
    },
    /// A cache query found no synced informer of the type covering the namespace asked for.
    #[error("listing {gvk} in {namespace} from the cache: no synced informer covers it")]
    NotCached {
        /// `group/version/kind` of the type.
        gvk: String,
        /// The namespace asked for (`all namespaces` when none).
        namespace: String,
    },
    /// A cache query's field selector could not be parsed.
    #[error("listing {gvk} from the cache")]
    ParseFieldSelector {
        /// `group/version/kind` of the type.
        gvk: String,
        /// The parse error.
        #[source]
        source: ParseFieldSelectorError,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct InformerKey {
    gvk: String,
    scope: Scope,
}

struct Entry {
    shared: Arc<dyn Any + Send + Sync>,
    synced: watch::Receiver<bool>,
    description: String,
    /// Label or field selectors: the informer holds a subset of the objects.
    restricted: bool,
    /// A transform other than the default.
    custom_transform: bool,
}

/// A running informer found for a read, with what the reader must know about it.
pub(crate) struct Found<K> {
    /// The informer.
    pub(crate) informer: Informer<K>,
    /// It watches with label or field selectors, so it holds a subset of the objects.
    pub(crate) restricted: bool,
    /// Its transform is not the default one (objects may lack data).
    pub(crate) custom_transform: bool,
}

/// Whether `scope` holds every object of `namespace` (`None`: of every namespace).
fn covers(scope: &Scope, namespace: Option<&str>) -> bool {
    match (scope, namespace) {
        (Scope::All, _) => true,
        (_, None) => false,
        (Scope::Namespace(ns), Some(wanted)) => ns == wanted,
        (Scope::Namespaces(set), Some(wanted)) => set.contains(wanted),
    }
}

struct Inner {
    client: Client,
    informers: Mutex<HashMap<InformerKey, Entry>>,
    options: Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>,
    shutdown: watch::Sender<bool>,
    started_informers: AtomicUsize,
    started_watches: AtomicUsize,
}

/// The caches of a manager, shared by all its controllers. Cheap to clone (clones share
/// everything).
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
}

impl Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("started_informers", &self.started_informers())
            .field("started_watches", &self.started_watches())
            .finish_non_exhaustive()
    }
}

fn gvk_of<K: Resource<DynamicType = ()>>() -> String {
    type_key::<K>(&())
}

/// The key of the informers of `K`: `group/version/kind`, with ` (metadata only)` for
/// [`PartialObjectMeta`](kube::core::PartialObjectMeta) types, which are cached apart from the
/// full objects of the same kind.
pub(crate) fn type_key<K: Resource>(dt: &K::DynamicType) -> String {
    let gvk = format!("{}/{}/{}", K::group(dt), K::version(dt), K::kind(dt));
    if K::metadata_api() {
        format!("{gvk} (metadata only)")
    } else {
        gvk
    }
}

impl Cache {
    /// A cache reading through `client`; it runs until [`Cache::shutdown`] or until every
    /// clone is dropped.
    pub fn new(client: Client) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                informers: Mutex::new(HashMap::new()),
                options: Mutex::new(HashMap::new()),
                shutdown: watch::Sender::new(false),
                started_informers: AtomicUsize::new(0),
                started_watches: AtomicUsize::new(0),
            }),
        }
    }

    /// A cache that shuts down when `shutdown` completes (a signal, a cancellation token's
    /// `cancelled_owned()`, a `watch::Receiver` waited on, ...). Must be called inside a Tokio
    /// runtime.
    pub fn with_shutdown(
        client: Client,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Self, CacheError> {
        let cache = Self::new(client);
        let handle =
            tokio::runtime::Handle::try_current().map_err(|_| CacheError::StartShutdownWatch)?;
        let weak = Arc::downgrade(&cache.inner);
        handle.spawn(async move {
            shutdown.await;
            if let Some(inner) = weak.upgrade() {
                inner.shutdown.send_replace(true);
            }
        });
        Ok(cache)
    }

    /// Stops every watch of this cache. Informer handles keep their last contents.
    pub fn shutdown(&self) {
        info!("cache shutting down");
        self.inner.shutdown.send_replace(true);
    }

    /// Whether [`Cache::shutdown`] happened.
    pub fn is_shut_down(&self) -> bool {
        *self.inner.shutdown.borrow()
    }

    /// Sets the selectors and transform of the informers of `K`. Must be called before the
    /// first informer of `K` starts ([`CacheError::Configure`] otherwise).
    pub fn configure<K>(&self, options: TypeOptions<K>) -> Result<(), CacheError>
    where
        K: Resource<DynamicType = ()> + Send + Sync + 'static,
    {
        self.configure_key(gvk_of::<K>(), options)
    }

    fn configure_key<K: Send + Sync + 'static>(
        &self,
        gvk: String,
        options: TypeOptions<K>,
    ) -> Result<(), CacheError> {
        let informers = self
            .inner
            .informers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if informers.keys().any(|k| k.gvk == gvk) {
            return Err(CacheError::Configure { gvk });
        }
        self.inner
            .options
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(gvk, Arc::new(options));
        Ok(())
    }

    fn options<K: Resource + 'static>(&self, gvk: &str) -> TypeOptions<K> {
        self.inner
            .options
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(gvk)
            .and_then(|o| o.downcast_ref::<TypeOptions<K>>().cloned())
            .unwrap_or_default()
    }

    /// The informer of the namespaced type `K` on `scope`, started on first use; later calls
    /// with the same type and scope share it.
    pub fn informer<K>(&self, scope: Scope) -> Result<Informer<K>, CacheError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::Scope: NamespaceScope,
    {
        let client = self.inner.client.clone();
        self.get_or_start(gvk_of::<K>(), scope, move |ns| match ns {
            None => Api::all(client.clone()),
            Some(ns) => Api::all(client.clone()).constrain(ns),
        })
    }

    /// The informer of the kind described by `resource` (unstructured [`DynamicObject`]s) on
    /// `scope`, started on first use; later calls with the same kind and scope share it. Use
    /// [`Scope::All`] for a cluster-scoped kind. Selectors and transform come from
    /// [`Cache::configure_dynamic`].
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        scope: Scope,
    ) -> Result<Informer<DynamicObject>, CacheError> {
        let client = self.inner.client.clone();
        let dt = resource.clone();
        self.get_or_start(
            type_key::<DynamicObject>(resource),
            scope,
            move |ns| match ns {
                None => Api::all_with(client.clone(), &dt),
                Some(ns) => Api::namespaced_with(client.clone(), ns, &dt),
            },
        )
    }

    /// [`Cache::configure`] for the unstructured informers of the kind `resource`.
    pub fn configure_dynamic(
        &self,
        resource: &ApiResource,
        options: TypeOptions<DynamicObject>,
    ) -> Result<(), CacheError> {
        self.configure_key(type_key::<DynamicObject>(resource), options)
    }

    /// A query on the cached objects of `K`; see [`CacheList`].
    pub fn list<K>(&self) -> CacheList<K>
    where
        K: Resource<DynamicType = ()> + serde::Serialize + Clone + Send + Sync + 'static,
    {
        CacheList::new(self.clone(), gvk_of::<K>())
    }

    /// A query on the cached unstructured objects of the kind `resource`; see [`CacheList`].
    pub fn list_dynamic(&self, resource: &ApiResource) -> CacheList<DynamicObject> {
        CacheList::new(self.clone(), type_key::<DynamicObject>(resource))
    }

    /// Whether an informer of the type with key `key` was started, whatever its scope and
    /// whether it has synced.
    pub(crate) fn has_type(&self, key: &str) -> bool {
        self.inner
            .informers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .any(|k| k.gvk == key)
    }

    /// The running, synced informer of the type with key `key` whose scope covers `namespace`
    /// (`None`: all namespaces), if any. Never starts one.
    pub(crate) fn find<K>(&self, key: &str, namespace: Option<&str>) -> Option<Found<K>>
    where
        K: Resource + Clone + Send + Sync + 'static,
    {
        let informers = self
            .inner
            .informers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        informers
            .iter()
            .filter(|(k, e)| k.gvk == key && covers(&k.scope, namespace) && *e.synced.borrow())
            .find_map(|(_, e)| {
                let shared = Arc::clone(&e.shared).downcast::<Shared<K>>().ok()?;
                Some(Found {
                    informer: Informer { shared },
                    restricted: e.restricted,
                    custom_transform: e.custom_transform,
                })
            })
    }

    /// The informer of the cluster-scoped type `K` (or of a namespaced type across all
    /// namespaces), started on first use; later calls share it.
    pub fn cluster_informer<K>(&self) -> Result<Informer<K>, CacheError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let client = self.inner.client.clone();
        self.get_or_start(gvk_of::<K>(), Scope::All, move |_| Api::all(client.clone()))
    }

    fn get_or_start<K>(
        &self,
        gvk: String,
        scope: Scope,
        api_for: impl Fn(Option<&str>) -> Api<K>,
    ) -> Result<Informer<K>, CacheError>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let key = InformerKey {
            gvk: gvk.clone(),
            scope: scope.clone(),
        };
        let mut informers = self
            .inner
            .informers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = informers.get(&key) {
            return Arc::clone(&entry.shared)
                .downcast::<Shared<K>>()
                .map(|shared| Informer { shared })
                .map_err(|_| CacheError::InformerType { gvk, scope });
        }
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| CacheError::StartInformer { gvk: gvk.clone() })?;
        let options = self.options::<K>(&gvk);
        let description = format!("{gvk} in {scope}");
        let partitions = scope.partitions();
        let shared = Arc::new(Shared::new(
            partitions.len(),
            Arc::clone(&options.transform),
            description.clone(),
            self.inner.shutdown.subscribe(),
        ));
        let mut config = watcher::Config::default();
        if let Some(labels) = &options.label_selector {
            config = config.labels(labels);
        }
        if let Some(fields) = &options.field_selector {
            config = config.fields(fields);
        }
        info!(informer = %description, "starting informer");
        for ns in partitions {
            let api = api_for(ns.as_deref());
            self.inner.started_watches.fetch_add(1, Ordering::Relaxed);
            handle.spawn(run_stream(
                Arc::clone(&shared),
                api,
                config.clone(),
                ns,
                self.inner.shutdown.subscribe(),
            ));
        }
        self.inner.started_informers.fetch_add(1, Ordering::Relaxed);
        informers.insert(
            key,
            Entry {
                shared: Arc::clone(&shared) as Arc<dyn Any + Send + Sync>,
                synced: shared.synced_receiver(),
                description,
                restricted: options.label_selector.is_some() || options.field_selector.is_some(),
                custom_transform: options.custom_transform,
            },
        );
        Ok(Informer { shared })
    }

    /// How many informers (distinct type + scope) this cache has started.
    pub fn started_informers(&self) -> usize {
        self.inner.started_informers.load(Ordering::Relaxed)
    }

    /// How many list+watch streams this cache has started (one per informer, or one per
    /// namespace for a [`Scope::Namespaces`] informer).
    pub fn started_watches(&self) -> usize {
        self.inner.started_watches.load(Ordering::Relaxed)
    }

    /// Whether every informer started so far has synced.
    pub fn is_synced(&self) -> bool {
        self.inner
            .informers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .all(|e| *e.synced.borrow())
    }

    /// Waits until every informer started so far has synced; fails if the cache shuts down
    /// first.
    pub async fn wait_for_sync(&self) -> Result<(), CacheError> {
        let pending: Vec<(watch::Receiver<bool>, String)> = self
            .inner
            .informers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|e| (e.synced.clone(), e.description.clone()))
            .collect();
        for (synced, description) in pending {
            informer::wait_synced(synced, self.inner.shutdown.subscribe(), &description).await?;
        }
        Ok(())
    }
}
