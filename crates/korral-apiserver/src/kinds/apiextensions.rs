//! `apiextensions.k8s.io/v1`: CustomResourceDefinitions. A stored CRD makes the registry serve
//! its kinds (see [`crate::crd`]).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;
use serde_json::Value;

use super::KindDef;
use super::lists::{APPLY_CONDITIONS, ListAt};
use super::strategy::{Context, DeletePlan, Strategy};
use crate::crd;
use crate::error::{ApiError, Cause};
use crate::meta;
use crate::registry::Registry;

/// The strategy of `CustomResourceDefinition`.
#[derive(Debug, Clone, Copy)]
struct CrdStrategy;

impl Strategy for CrdStrategy {
    fn finalizer_names(&self) -> super::FinalizerNames {
        // Upstream validates these with the generic `ValidateObjectMeta`.
        super::FinalizerNames::Qualified
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            obj,
        );
        crd::default_spec(obj);
    }

    fn validate(&self, obj: &Value, ctx: &Context) -> Vec<Cause> {
        crd::validate(obj, None, &ctx.registry)
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        // Upstream's status strategy checks only the accepted names.
        match ctx.subresource {
            Some("status") => crd::validate_status_update(obj, old),
            _ => crd::validate(obj, Some(old), &ctx.registry),
        }
    }

    fn complete(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        ctx: &Context,
    ) -> Result<(), ApiError> {
        match old {
            None => crd::prepare_create(obj, &ctx.registry, &ctx.storage.snapshot()),
            Some(old) => {
                crd::prepare_update(obj, &ctx.registry, &ctx.storage.snapshot());
                // A /status write keeps the stored versions it asks for.
                if ctx.subresource != Some("status") {
                    crd::record_stored_version(obj, old);
                }
            }
        }
        Ok(())
    }

    fn prepare_for_delete(&self, cur: &Value, finalizers: &mut Vec<String>) -> DeletePlan {
        if !meta::is_deleting(cur) && !finalizers.iter().any(|f| f == crd::CLEANUP_FINALIZER) {
            finalizers.push(crd::CLEANUP_FINALIZER.to_string());
        }
        DeletePlan::Finalizers
    }

    fn mark_deleting(&self, obj: &mut Value) {
        crd::mark_terminating(obj);
    }

    fn after_write(&self, registry: &Registry, obj: &Value) {
        crd::register(registry, obj);
    }

    fn after_delete(&self, registry: &Registry, obj: &Value) {
        crd::unregister(registry, obj);
    }
}

/// CustomResourceDefinition `status.conditions`: keyed by `type` for applies only (the lists
/// of its schemas are declared with `JSONSchemaProps` in `lists`).
const CRD_LISTS: &[ListAt] = &[ListAt {
    path: "status.conditions",
    rule: APPLY_CONDITIONS,
}];

/// The kinds of `apiextensions.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            CrdStrategy,
        )
        .schema::<api::CustomResourceDefinition>()
        .lists(CRD_LISTS)
        .cluster_scoped()
        .short(&["crd", "crds"])
        .category(super::API_EXTENSIONS)
        .status()
        .generation(),
    ]
}
