//! Building the [`Api`] of a type for one namespace (or none), whatever its scope.

use kube::api::Api;
use kube::core::{ClusterResourceScope, DynamicResourceScope, NamespaceResourceScope};
use kube::{Client, Resource};

mod private {
    pub trait Sealed {}
    impl Sealed for kube::core::NamespaceResourceScope {}
    impl Sealed for kube::core::ClusterResourceScope {}
    impl Sealed for kube::core::DynamicResourceScope {}
}

/// The scope of a resource type (namespaced, cluster-scoped or known at run time): how the
/// cached client addresses objects of it. Implemented for kube's three scope types only.
pub trait ApiScope: private::Sealed + Sized {
    /// The [`Api`] of `K` in `namespace` (`None`: cluster-scoped, or every namespace).
    fn api<K: Resource<Scope = Self>>(
        client: Client,
        dt: &K::DynamicType,
        namespace: Option<&str>,
    ) -> Api<K>;
}

impl ApiScope for NamespaceResourceScope {
    fn api<K: Resource<Scope = Self>>(
        client: Client,
        dt: &K::DynamicType,
        namespace: Option<&str>,
    ) -> Api<K> {
        let api = Api::all_with(client, dt);
        match namespace {
            Some(ns) => api.constrain(ns),
            None => api,
        }
    }
}

impl ApiScope for ClusterResourceScope {
    fn api<K: Resource<Scope = Self>>(
        client: Client,
        dt: &K::DynamicType,
        _namespace: Option<&str>,
    ) -> Api<K> {
        Api::all_with(client, dt)
    }
}

impl ApiScope for DynamicResourceScope {
    fn api<K: Resource<Scope = Self>>(
        client: Client,
        dt: &K::DynamicType,
        namespace: Option<&str>,
    ) -> Api<K> {
        match namespace {
            Some(ns) => Api::namespaced_with(client, ns, dt),
            None => Api::all_with(client, dt),
        }
    }
}
