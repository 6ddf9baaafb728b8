//! The Memcached API: `cache.example.com/v1`, kind `Memcached`.
//!
//! `korral generate` turns these types into the CRD `memcacheds.cache.example.com` (with an
//! OpenAPI schema derived by schemars), so the doc comments become the field descriptions.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a Memcached.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1",
    kind = "Memcached",
    namespaced
)]
#[kube(status = "MemcachedStatus")]
#[kube(doc = "Memcached is the Schema for the memcacheds API.")]
#[kube(printcolumn(name = "Size", type_ = "integer", json_path = ".spec.size"))]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// How many memcached pods to run.
    #[schemars(range(min = 0))]
    pub size: i32,
}

/// The observed state of a Memcached, written by its controller through the status subresource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// The names of the memcached pods.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// The `metadata.generation` of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
