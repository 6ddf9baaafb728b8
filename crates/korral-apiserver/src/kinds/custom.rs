//! The strategy of custom resources, derived from their CRD version's structural schema:
//! pruning, defaults, validation and CEL rules (`x-kubernetes-validations`).

use std::sync::Arc;

use serde_json::Value;

use super::strategy::{Context, Strategy};
use crate::error::{ApiError, Cause};
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::{cel, schema};

/// The strategy of one served version of a custom resource.
#[derive(Debug, Clone)]
pub(crate) struct CustomResourceStrategy {
    schema: Option<Arc<Value>>,
    /// The defining CRD's name (`<plural>.<group>`).
    crd_name: String,
    /// Whether the defining CRD is being deleted (the registry re-derives its kinds, and so
    /// this strategy, on every write of the CRD, the deletion mark included).
    terminating: bool,
}

impl CustomResourceStrategy {
    /// A strategy for objects validated by `schema` (`openAPIV3Schema`), if any, defined by
    /// the CRD `crd_name`, which is `terminating` or not.
    pub(crate) fn new(schema: Option<Arc<Value>>, crd_name: String, terminating: bool) -> Self {
        Self {
            schema,
            crd_name,
            terminating,
        }
    }

    /// Every cause, and on an update the warnings of ratcheted rules: schema checks and rules
    /// on values unchanged since `old` are not enforced (upstream's validation ratcheting).
    fn causes(&self, obj: &Value, old: Option<&Value>, ctx: &Context) -> (Vec<Cause>, Vec<String>) {
        let Some(s) = &self.schema else {
            return (Vec::new(), Vec::new());
        };
        let patterns = ctx.registry.pattern_cache();
        let mut causes = match old {
            None => schema::validate_with(obj, s, "", patterns),
            Some(old) => schema::validate_update_with(obj, old, s, "", patterns),
        };
        causes.retain(|c| !c.field.starts_with("metadata") || c.field == "metadata");
        let mut warnings = Vec::new();
        // CEL rules run unless a blocking schema error came first.
        if cel::has_rules(s) {
            match schema::blocked_rules_cause(&causes) {
                Some(blocked) => causes.push(blocked),
                None => {
                    let (failed, ratcheted) =
                        cel::validate_ratcheted(obj, old, s, ctx.registry.cel_cache());
                    causes.extend(failed);
                    warnings = ratcheted;
                }
            }
        }
        (causes, warnings)
    }
}

impl Strategy for CustomResourceStrategy {
    fn finalizer_names(&self) -> super::FinalizerNames {
        super::FinalizerNames::PreferQualified
    }

    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let finalizers = crate::meta::finalizers(obj);
        let names: Vec<&str> = finalizers.iter().map(String::as_str).collect();
        crate::validation::names::unqualified_finalizer_warnings(&names, "metadata.finalizers")
    }

    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        let Some(s) = &self.schema else {
            return Ok(Vec::new());
        };
        let warnings: Vec<String> = schema::prune(obj, s)
            .iter()
            .map(|p| format!("unknown field \"{p}\""))
            .collect();
        match validation {
            FieldValidation::Strict if !warnings.is_empty() => Err(ApiError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
                warnings.join(", "),
                kind = info.kind,
                version = info.version,
            ))),
            FieldValidation::Warn => Ok(warnings),
            _ => Ok(Vec::new()),
        }
    }

    /// No new objects while the CRD is terminating (upstream's 405; updates, which remove
    /// finalizers, still go through).
    fn complete(
        &self,
        _obj: &mut Value,
        old: Option<&Value>,
        _ctx: &Context,
    ) -> Result<(), ApiError> {
        if old.is_none() && self.terminating {
            let (resource, group) = self
                .crd_name
                .split_once('.')
                .unwrap_or((self.crd_name.as_str(), ""));
            return Err(ApiError::method_not_supported(
                group,
                resource,
                "create not allowed while custom resource definition is terminating",
            ));
        }
        Ok(())
    }

    fn default(&self, obj: &mut Value) {
        if let Some(s) = &self.schema {
            schema::drop_non_nullable_nulls(obj, s);
            schema::apply_defaults(obj, s);
        }
    }

    fn validate(&self, obj: &Value, ctx: &Context) -> Vec<Cause> {
        self.causes(obj, None, ctx).0
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        self.causes(obj, Some(old), ctx).0
    }

    fn validate_update_warned(
        &self,
        obj: &Value,
        old: &Value,
        ctx: &Context,
    ) -> (Vec<Cause>, Vec<String>) {
        self.causes(obj, Some(old), ctx)
    }
}
