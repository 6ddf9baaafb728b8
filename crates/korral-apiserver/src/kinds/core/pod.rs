//! Pods.

use serde_json::Value;

use crate::kinds::strategy::{Context, Strategy};
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::podspec;
use crate::{ApiError, quantity};

/// The strategy of `v1/Pod`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PodStrategy;

impl Strategy for PodStrategy {
    fn prepare_for_create(&self, _info: &ResourceInfo, _obj: &mut Value, _ctx: &Context) {
        // The status a client sends on create is kept (upstream resets it to Pending; the
        // simulation and tests rely on seeding it).
    }

    /// Quantities are read as upstream's decoder reads them (a JSON number is a quantity too)
    /// and written back in canonical form; a malformed one makes the object undecodable (400).
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        if let Some(spec) = obj.get_mut("spec") {
            podspec::canonicalize_pod_spec(spec).map_err(|e| quantity::undecodable(info, e))?;
        }
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "Pod", obj);
    }
}
