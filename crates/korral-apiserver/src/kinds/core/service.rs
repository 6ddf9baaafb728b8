//! Services: defaults and cluster IP allocation.

use std::sync::Mutex;

use serde_json::Value;

use crate::defaults::{ServiceIpAllocator, assign_cluster_ip, cluster_ips_in_use};
use crate::error::ApiError;
use crate::kinds::strategy::{Context, Strategy};
use crate::meta;
use crate::storage::collection_prefix;

/// The strategy of `v1/Service`. It owns this server's cluster IP allocator.
#[derive(Debug)]
pub(crate) struct ServiceStrategy {
    cluster_ips: Mutex<ServiceIpAllocator>,
}

impl ServiceStrategy {
    /// A strategy allocating from the default service range.
    pub(crate) fn new() -> Self {
        Self {
            cluster_ips: Mutex::new(ServiceIpAllocator::new()),
        }
    }
}

impl Strategy for ServiceStrategy {
    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "Service", obj);
    }

    fn complete(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        ctx: &Context,
    ) -> Result<(), ApiError> {
        let snapshot = ctx.storage.snapshot();
        let prefix = collection_prefix("", "services", None);
        let uid = meta::uid(obj).to_string();
        let in_use = cluster_ips_in_use(
            snapshot
                .range(&prefix, None)
                .filter(|(_, s)| meta::uid(s) != uid)
                .map(|(_, s)| s.as_ref()),
        );
        let requested: Vec<String> = meta::path(obj, "spec.clusterIP")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| vec![s.to_string()])
            .unwrap_or_default();
        let mut allocator = self.cluster_ips.lock().unwrap_or_else(|e| e.into_inner());
        match assign_cluster_ip(obj, old, &mut allocator, &in_use) {
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_api_error(meta::name(obj), &requested)),
        }
    }
}
