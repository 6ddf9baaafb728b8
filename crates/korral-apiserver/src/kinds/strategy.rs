//! The strategy of a kind: everything the write pipeline asks a kind, in upstream's order
//! (`pkg/registry/<group>/<kind>/strategy.go`).
//!
//! The generic store ([`crate::objects`]) owns keys, resource versions, uids, timestamps,
//! generation, managed fields, preconditions, dry run, finalizers, deletion and watch fan-out. It
//! never names a kind: for everything a kind decides it calls that kind's strategy, held in the
//! registry next to the kind's resource info.
//!
//! A write goes through, in order:
//! 1. [`Strategy::prepare_for_create`] / [`Strategy::prepare_for_update`]: reset what a client may
//!    not set (status on the main resource, server-owned fields);
//! 2. [`Strategy::decode`]: field validation against the kind's schema (unknown fields pruned,
//!    refused under `Strict`, warned about under `Warn`);
//! 3. [`Strategy::default`], then [`Strategy::canonicalize`];
//! 4. [`Strategy::validate`] / [`Strategy::validate_update`] (422 with every cause);
//! 5. inside the guarded update, after the stored object was read: [`Strategy::complete`]
//!    (cluster IPs, node ports, computed state) and admission;
//! 6. after the commit: [`Strategy::after_write`] / [`Strategy::after_delete`].

use std::fmt::Debug;
use std::sync::Arc;

use serde_json::Value;

use crate::auth::UserInfo;
use crate::error::{ApiError, Cause};
use crate::objects::FieldValidation;
use crate::registry::{Registry, ResourceInfo};
use crate::storage::Storage;

/// What a strategy may consult besides the object: the server's registry and storage, and
/// the request (upstream's request context): who asks and which subresource it writes.
///
/// Inside the guarded update the store may be read (its writers are serialised), so checks that
/// look at other objects (allocations, quotas) cannot race with a concurrent write.
#[derive(Clone)]
pub(crate) struct Context {
    /// The resources this server serves (and its per-server caches).
    pub registry: Arc<Registry>,
    /// The server's storage.
    pub storage: Arc<dyn Storage>,
    /// The client making the request (`None` for the server's own writes).
    pub user: Option<UserInfo>,
    /// The subresource an update writes (`status`, `approval`); `None` for the main resource.
    pub subresource: Option<&'static str>,
    /// How the server authorizes: admission plugins that authorize the requester consult it.
    pub authorization: crate::server::AuthorizationMode,
    /// The optional built-in admission plugins this server runs.
    pub plugins: crate::builtin_admission::Plugins,
}

/// How a kind checks `metadata.finalizers` names beyond their being qualified names (which
/// every kind requires).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinalizerNames {
    /// A name without a domain must be a standard finalizer (`kubernetes`, `orphan`,
    /// `foregroundDeletion`): the kinds validated through upstream's core `ValidateObjectMeta`.
    Standard,
    /// Any qualified name (upstream's generic `ValidateObjectMeta`: CRDs, admission
    /// configurations).
    Qualified,
    /// Any qualified name, with a warning for a name without a domain (custom resources).
    PreferQualified,
}

/// How deleting an existing object proceeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeletePlan {
    /// The generic rules: garbage-collection finalizers by propagation policy, removal once no
    /// finalizer remains.
    Finalizers,
    /// The object is only marked as being deleted (deletion timestamp set, then
    /// [`Strategy::mark_deleting`]); a controller finishes the job (Namespaces).
    MarkOnly,
}

/// The per-kind half of the write pipeline. Every method has the behaviour of a kind without
/// special rules, so a strategy overrides only what its kind does differently.
pub(crate) trait Strategy: Debug + Send + Sync {
    /// Resets what a client may not set on create. By default, the status of kinds with a status
    /// subresource.
    fn prepare_for_create(&self, info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        if info.status_subresource {
            strip_status(obj);
        }
    }

    /// Carries over or resets server-owned fields on update, given the stored object.
    fn prepare_for_update(&self, _obj: &mut Value, _old: &Value) {}

    /// Resets what an update through `subresource` may not change, given the stored object
    /// (upstream's per-subresource strategies: a CSR's `approval` writes only its conditions).
    /// Runs after [`Strategy::prepare_for_update`], on top of the generic rules (a `/status`
    /// write keeps everything but `status`); nothing more by default.
    fn prepare_for_subresource_update(&self, _subresource: &str, _obj: &mut Value, _old: &Value) {}

    /// Update subresources besides `status` and `scale` (`approval`): their writes reach the
    /// strategy whole, and [`Strategy::prepare_for_subresource_update`] keeps what they may not
    /// change.
    fn subresources(&self) -> &'static [&'static str] {
        &[]
    }

    /// The verbs one of [`Strategy::subresources`] serves (upstream's `finalize` is update
    /// only); others answer 405.
    fn subresource_verbs(&self, _subresource: &str) -> &'static [&'static str] {
        &["get", "patch", "update"]
    }

    /// Field validation against the kind's schema. Built-in kinds drop the fields upstream's
    /// types do not know (refused under `Strict`, warned about under `Warn`); a value of the wrong
    /// JSON type is a 400. Returns the warnings.
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    /// Fills upstream's defaults. Applying them twice changes nothing.
    fn default(&self, _obj: &mut Value) {}

    /// Rewrites values into the form upstream serializes (quantities: `0.5` → `500m`).
    fn canonicalize(&self, _obj: &mut Value) {}

    /// Validates a new object: every cause, with upstream's field paths and messages.
    fn validate(&self, _obj: &Value, _ctx: &Context) -> Vec<Cause> {
        Vec::new()
    }

    /// Validates an update against the stored object (immutable fields included).
    fn validate_update(&self, obj: &Value, _old: &Value, ctx: &Context) -> Vec<Cause> {
        self.validate(obj, ctx)
    }

    /// [`Strategy::validate_update`] answering also the warnings of the checks it did not
    /// enforce (custom resources: rules ratcheted on unchanged values). The pipeline calls this.
    fn validate_update_warned(
        &self,
        obj: &Value,
        old: &Value,
        ctx: &Context,
    ) -> (Vec<Cause>, Vec<String>) {
        (self.validate_update(obj, old, ctx), Vec::new())
    }

    /// How this kind's `metadata.finalizers` names are checked beyond being qualified names.
    fn finalizer_names(&self) -> FinalizerNames {
        FinalizerNames::Standard
    }

    /// Warnings for a valid object being created (`Warning` headers).
    fn warnings_on_create(&self, _obj: &Value) -> Vec<String> {
        Vec::new()
    }

    /// Warnings for a valid update.
    fn warnings_on_update(&self, obj: &Value, _old: &Value) -> Vec<String> {
        self.warnings_on_create(obj)
    }

    /// Completes a valid object inside the guarded update, after the stored object was read:
    /// allocations (cluster IPs, node ports) and state the server computes from other objects
    /// (a CRD's accepted names). `old` is the stored object on update.
    fn complete(
        &self,
        _obj: &mut Value,
        _old: Option<&Value>,
        _ctx: &Context,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// Refuses deleting `cur` (a system PriorityClass), before anything changes.
    fn validate_delete(&self, _cur: &Value) -> Result<(), ApiError> {
        Ok(())
    }

    /// How deleting `cur` proceeds; may add server finalizers to `finalizers`.
    fn prepare_for_delete(&self, _cur: &Value, _finalizers: &mut Vec<String>) -> DeletePlan {
        DeletePlan::Finalizers
    }

    /// Graceful deletion (upstream's `RESTGracefulDeleteStrategy.CheckGracefulDelete`): how
    /// many seconds deleting `cur` waits before the object is removed, given the
    /// `gracePeriodSeconds` the client asked for (`requested`, never negative). `None` for a
    /// kind deleted at once (the default); `Some(0)` deletes at once too, through the graceful
    /// path (the object is first written with its deletion timestamp, then removed).
    ///
    /// The generic store does the rest (upstream's `rest.BeforeDelete`): a positive period
    /// keeps the object with `deletionTimestamp` = now + period and
    /// `deletionGracePeriodSeconds` = period, until someone deletes it with period 0; a second
    /// delete may only shorten it.
    fn graceful_delete_period(&self, _cur: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// Marks an object whose deletion just started (conditions, phase).
    fn mark_deleting(&self, _obj: &mut Value) {}

    /// Whether something besides `metadata.finalizers` still holds a deleted object
    /// (a Namespace's `spec.finalizers`).
    fn blocks_removal(&self, _obj: &Value) -> bool {
        false
    }

    /// The object as this served version shows it, given the stored one, for a kind stored in
    /// another version's shape (`autoscaling/v1` HPAs are stored as `autoscaling/v2`). `None`
    /// when the stored shape is this version's (only `apiVersion` differs).
    fn convert_stored(&self, _info: &ResourceInfo, _stored: &Value) -> Option<Value> {
        None
    }

    /// The object to store, given one in this served version's shape (the inverse of
    /// [`Strategy::convert_stored`]).
    fn convert_for_storage(&self, obj: Value) -> Value {
        obj
    }

    /// The `(group, resource)` whose collection stores this kind's objects, when it is another
    /// resource's (`events.k8s.io` Events are core `events`, one resource served by two
    /// groups); `None`: its own. Keys, lists and watches read it through
    /// [`ResourceInfo::storage_identity`]; [`Strategy::convert_stored`] gives the served shape.
    fn stored_as(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    /// The value of the selectable field `field` (one the kind declares) of a stored object,
    /// as upstream's `GetAttrs` gives it; the field's JSON value by default.
    fn selectable_field(&self, stored: &Value, field: &str) -> Option<String> {
        crate::selector::json_field(stored, field)
    }

    /// For kinds computed at each read instead of stored (ComponentStatus): every object a
    /// read sees now, given whether the server simulates a cluster; `None` for stored kinds.
    fn computed(&self, _simulating: bool) -> Option<Vec<Value>> {
        None
    }

    /// Keeps derived server state in step with a committed object (CRD → served kinds).
    fn after_write(&self, _registry: &Registry, _obj: &Value) {}

    /// Keeps derived server state in step with a removed object.
    fn after_delete(&self, _registry: &Registry, _obj: &Value) {}

    /// The order of a listed `Table`'s rows, for a kind whose upstream list printer sorts them
    /// (FlowSchemas by matching precedence); `None` keeps the list's order.
    fn table_row_order(&self) -> Option<fn(&Value, &Value) -> std::cmp::Ordering> {
        None
    }
}

/// Removes `status` from an object.
pub(crate) fn strip_status(obj: &mut Value) {
    if let Some(map) = obj.as_object_mut() {
        map.remove("status");
    }
}

/// A kind without rules of its own beyond schema decoding (ConfigMap, Lease, …).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Plain;

impl Strategy for Plain {}

/// A kind whose only rules are upstream's defaults, by group and kind (see [`crate::defaults`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Defaulted {
    group: &'static str,
    kind: &'static str,
}

impl Defaulted {
    /// The strategy of `group`/`kind`, defaulted as upstream does.
    pub(crate) const fn new(group: &'static str, kind: &'static str) -> Self {
        Self { group, kind }
    }
}

impl Strategy for Defaulted {
    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults(self.group, self.kind, obj);
    }
}
