//! Pods.

use serde_json::Value;

use crate::kinds::strategy::{Context, Strategy};
use crate::registry::ResourceInfo;

/// The strategy of `v1/Pod`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PodStrategy;

impl Strategy for PodStrategy {
    fn prepare_for_create(&self, _info: &ResourceInfo, _obj: &mut Value, _ctx: &Context) {
        // The status a client sends on create is kept (upstream resets it to Pending; the
        // simulation and tests rely on seeding it).
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "Pod", obj);
    }
}
