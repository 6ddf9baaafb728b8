//! Services: defaults, upstream's validation ([`super::service_validation`]), and cluster IP
//! and node port allocation ([`super::service_nodeports`]).

use std::sync::Mutex;

use serde_json::Value;

use super::service_families::allocation_refusals;
use super::service_nodeports::{NodePortError, assign_node_ports, node_ports_in_use};
use super::service_validation::{
    default_ingress_ip_mode, drop_type_dependent_fields, normalize_cluster_ips,
    validate_load_balancer_status, validate_service, validate_service_update,
};
use crate::defaults::{ServiceIpAllocator, assign_cluster_ip, cluster_ips_in_use};
use crate::error::{ApiError, Cause};
use crate::kinds::strategy::{Context, Strategy};
use crate::meta;
use crate::storage::collection_prefix;
use crate::validation::names;

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
    fn prepare_for_update(&self, obj: &mut Value, old: &Value) {
        normalize_cluster_ips(obj, old);
        drop_type_dependent_fields(obj, old);
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "Service", obj);
        default_ingress_ip_mode(obj);
    }

    /// `ValidateService`, and the name as a DNS-1035 label (the generic metadata rules check
    /// only the looser RFC 1123 label, so only what they let through is reported here).
    /// What the allocator refuses comes first and alone, as upstream allocates before it
    /// validates.
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let refused = allocation_refusals(spec, None);
        if !refused.is_empty() {
            return refused;
        }
        let mut causes = Vec::new();
        let name = meta::name(obj);
        if !name.is_empty() && names::dns1123_label(name).is_empty() {
            causes.extend(
                names::dns1035_label(name)
                    .iter()
                    .map(|m| names::invalid_value("metadata.name", &Value::from(name), m)),
            );
        }
        causes.extend(validate_service(obj));
        causes
    }

    /// `ValidateServiceStatusUpdate` through `/status`; otherwise the allocator's refusals
    /// first, then `ValidateServiceUpdate`.
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return validate_load_balancer_status(obj);
        }
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let refused = allocation_refusals(spec, old.get("spec"));
        if !refused.is_empty() {
            return refused;
        }
        validate_service_update(obj, old)
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
        let others = || {
            snapshot
                .range(&prefix, None)
                .filter(|(_, s)| meta::uid(s) != uid)
        };
        let in_use = cluster_ips_in_use(others().map(|(_, s)| s.as_ref()));
        let node_ports = node_ports_in_use(others().map(|(_, s)| s.as_ref()));
        let requested: Vec<String> = meta::path(obj, "spec.clusterIP")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| vec![s.to_string()])
            .unwrap_or_default();
        let mut allocator = self.cluster_ips.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = assign_cluster_ip(obj, old, &mut allocator, &in_use) {
            return Err(e.to_api_error(meta::name(obj), &requested));
        }
        match assign_node_ports(obj, old, &node_ports) {
            Ok(()) => Ok(()),
            Err(NodePortError::Invalid(causes)) => {
                Err(ApiError::invalid("", "Service", meta::name(obj), causes))
            }
            Err(NodePortError::RangeFull) => Err(ApiError::internal(
                "failed to allocate a nodePort: range is full",
            )),
        }
    }
}
