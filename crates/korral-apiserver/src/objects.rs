//! Object lifecycle with Kubernetes semantics: create, update, patch, delete, get and list.
//!
//! HTTP handlers and the built-in controllers (garbage collector, namespace and CRD cleanup)
//! both go through [`Objects`], so every write obeys the same rules.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause};
use crate::kinds::strategy::strip_status;
use crate::kinds::{Context, DeletePlan};
use crate::meta;
use crate::patch::{self, PatchType};
use crate::registry::{NameRule, Registry, ResourceInfo};
use crate::selector::{FieldSelector, LabelSelector};
use crate::storage::{Committed, Object, Snapshot, Storage, Write, collection_prefix, object_key};
use crate::validation::names;

/// The finalizer the garbage collector uses for foreground deletion.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer the garbage collector uses to orphan dependents.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource: status changes are ignored when a status subresource exists.
    Main,
    /// The `/status` subresource: only status changes are kept.
    Status,
    /// Another update subresource the kind's strategy declares (`approval`): the write reaches
    /// the strategy whole, and the strategy keeps what the subresource may not change.
    Subresource(&'static str),
}

/// How unknown fields in a request are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and warn (the default).
    #[default]
    Warn,
    /// Reject unknown fields with 400.
    Strict,
}

impl FieldValidation {
    /// Parses the `fieldValidation` query parameter.
    pub fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}; must be one of Ignore, Warn, Strict"
            ))),
        }
    }
}

/// A check of the object a write is about to store, run inside the guarded update: after the
/// current object is read and the request applied to it, serialized with every other write,
/// so what it looks at (the stored object, RBAC roles) cannot change underneath it. RBAC
/// escalation prevention is one. An error refuses the write; nothing is stored.
#[derive(Clone)]
pub struct AdmissionCheck(Arc<CheckFn>);

/// The function behind an [`AdmissionCheck`].
type CheckFn = dyn Fn(&Value) -> Result<(), ApiError> + Send + Sync;

impl AdmissionCheck {
    /// A check from a function of the candidate object.
    pub fn new(check: impl Fn(&Value) -> Result<(), ApiError> + Send + Sync + 'static) -> Self {
        Self(Arc::new(check))
    }

    /// Runs the check on `candidate`.
    pub fn check(&self, candidate: &Value) -> Result<(), ApiError> {
        (self.0)(candidate)
    }
}

impl std::fmt::Debug for AdmissionCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdmissionCheck")
    }
}

/// An update that admission webhooks look at (see `Objects::admit_update`).
struct AdmittedUpdate<'a> {
    info: &'a Arc<ResourceInfo>,
    namespace: Option<&'a str>,
    name: &'a str,
    opts: &'a WriteOptions,
    part: Part,
    /// Who asked, when admission webhooks or policies apply to the kind.
    user: Option<&'a crate::auth::UserInfo>,
    /// The current object converted by its CRD's conversion webhook, when it has one (the
    /// update is then in the served version's shape and converted back before storing).
    converted: Option<Object>,
}

/// Options of a create, update or patch.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer without storing.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `force` (server-side apply only): take ownership of conflicting fields.
    pub force: bool,
    /// The request's `User-Agent` (empty when the header is missing; `None` for the server's
    /// own writes): names the field manager when `fieldManager` is absent.
    pub user_agent: Option<String>,
    /// A check of the object to store, run inside the guarded update (see [`AdmissionCheck`]).
    pub admission: Option<AdmissionCheck>,
    /// The client making the request: admission webhooks run for it (`None` for the server's
    /// own writes).
    pub requester: Option<crate::auth::UserInfo>,
}

impl WriteOptions {
    /// The field manager of a write: `fieldManager`, else the User-Agent's product (as
    /// upstream); `None` for the server's own writes, which are not tracked.
    pub fn manager(&self) -> Option<String> {
        match (&self.field_manager, &self.user_agent) {
            (Some(m), _) if !m.is_empty() => Some(m.clone()),
            (_, Some(ua)) => Some(crate::apply::manager_from_user_agent(ua)),
            _ => None,
        }
    }
}

/// How a write records `metadata.managedFields`.
#[derive(Debug, Clone)]
enum Track {
    /// Not at all (the server's own writes).
    None,
    /// An `Update` operation of this manager, on this subresource.
    Update(String, Option<&'static str>),
    /// The request was a server-side apply that computed `managedFields` itself.
    Applied,
}

impl Track {
    fn update(opts: &WriteOptions, subresource: Option<&'static str>) -> Track {
        match opts.manager() {
            Some(m) => Track::Update(m, subresource),
            None => Track::None,
        }
    }

    fn part(part: Part) -> Option<&'static str> {
        match part {
            Part::Main => None,
            Part::Status => Some("status"),
            Part::Subresource(name) => Some(name),
        }
    }
}

/// The result of a write: the object and any warnings for `Warning` headers.
#[derive(Debug, Clone)]
pub struct Written {
    /// The object as stored (or as it would be, for dry runs).
    pub object: Object,
    /// Warnings (unknown fields under `fieldValidation=Warn`).
    pub warnings: Vec<String>,
    /// Whether the write created the object.
    pub created: bool,
}

/// Deletion propagation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete now; the garbage collector deletes dependents afterwards.
    Background,
    /// Delete dependents first; the owner stays until they are gone.
    Foreground,
    /// Remove owner references from dependents, then delete.
    Orphan,
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `propagationPolicy` (or the deprecated `orphanDependents`).
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// The client making the request: admission webhooks run for it (`None` for the server's
    /// own deletes).
    pub requester: Option<crate::auth::UserInfo>,
}

/// Refuses a `DeleteOptions` body whose known fields have the wrong JSON type (a `preconditions`
/// uid that is a number, a `gracePeriodSeconds` string...): 400, as upstream's decoder. Ignoring
/// such a field would run the delete without the precondition or grace the client asked for.
fn check_delete_options_body(body: &Value) -> Result<(), ApiError> {
    let Value::Object(map) = body else {
        return Err(ApiError::bad_request(format!(
            "invalid DeleteOptions: expected an object, got {}",
            crate::error::render_value(body)
        )));
    };
    let wrong = |field: &str, want: &str, got: &Value| {
        ApiError::bad_request(format!(
            "invalid DeleteOptions: {field} must be {want}, not {}",
            crate::error::render_value(got)
        ))
    };
    type IsType = fn(&Value) -> bool;
    let fields: [(&str, &str, IsType); 4] = [
        ("propagationPolicy", "a string", Value::is_string),
        ("orphanDependents", "a boolean", Value::is_boolean),
        ("gracePeriodSeconds", "an integer", |v| v.is_i64()),
        ("dryRun", "a list of strings", Value::is_array),
    ];
    for (field, want, ok) in fields {
        if let Some(v) = map.get(field).filter(|v| !v.is_null())
            && !ok(v)
        {
            return Err(wrong(field, want, v));
        }
    }
    if let Some(pre) = map.get("preconditions").filter(|v| !v.is_null()) {
        let Value::Object(pre) = pre else {
            return Err(wrong("preconditions", "an object", pre));
        };
        for field in ["uid", "resourceVersion"] {
            if let Some(v) = pre.get(field).filter(|v| !v.is_null())
                && !v.is_string()
            {
                return Err(wrong(&format!("preconditions.{field}"), "a string", v));
            }
        }
    }
    Ok(())
}
impl DeleteOptions {
    /// Reads a `DeleteOptions` body (may be empty) and query parameters.
    pub fn from_request(
        body: Option<&Value>,
        query: &[(String, String)],
    ) -> Result<Self, ApiError> {
        let mut opts = DeleteOptions::default();
        let q = |name: &str| {
            query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let mut policy: Option<String> = q("propagationPolicy").map(str::to_string);
        let mut orphan: Option<bool> = q("orphanDependents").map(|v| v == "true");
        if let Some(v) = q("gracePeriodSeconds") {
            opts.grace_period_seconds = Some(v.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid gracePeriodSeconds: {v:?}"))
            })?);
        }
        for (_, v) in query.iter().filter(|(k, _)| k == "dryRun") {
            match v.as_str() {
                "" => {}
                "All" => opts.dry_run = true,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "dryRun: Unsupported value: {other:?}: supported values: \"All\""
                    )));
                }
            }
        }
        if let Some(body) = body {
            check_delete_options_body(body)?;
            if let Some(p) = body.get("propagationPolicy").and_then(Value::as_str) {
                policy = Some(p.to_string());
            }
            if let Some(o) = body.get("orphanDependents").and_then(Value::as_bool) {
                orphan = Some(o);
            }
            if let Some(g) = body.get("gracePeriodSeconds").and_then(Value::as_i64) {
                opts.grace_period_seconds = Some(g);
            }
            if let Some(pre) = body.get("preconditions") {
                opts.precondition_uid = pre.get("uid").and_then(Value::as_str).map(str::to_string);
                opts.precondition_resource_version = pre
                    .get("resourceVersion")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            if let Some(dry) = body.get("dryRun").and_then(Value::as_array) {
                for d in dry {
                    match d.as_str() {
                        Some("All") => opts.dry_run = true,
                        _ => {
                            return Err(ApiError::bad_request(format!(
                                "dryRun: Unsupported value: {d}: supported values: \"All\""
                            )));
                        }
                    }
                }
            }
        }
        opts.propagation = match (policy.as_deref(), orphan) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid(
                    "",
                    "DeleteOptions",
                    "",
                    vec![Cause::invalid(
                        "propagationPolicy",
                        &json!(policy),
                        "orphanDependents and deletionPropagation cannot be both set",
                    )],
                ));
            }
            (Some("Background"), _) => Some(Propagation::Background),
            (Some("Foreground"), _) => Some(Propagation::Foreground),
            (Some("Orphan"), _) => Some(Propagation::Orphan),
            (Some(other), _) => {
                return Err(ApiError::invalid(
                    "",
                    "DeleteOptions",
                    "",
                    vec![Cause::not_supported(
                        "propagationPolicy",
                        &json!(other),
                        &[json!("Foreground"), json!("Background"), json!("Orphan")],
                    )],
                ));
            }
            (None, Some(true)) => Some(Propagation::Orphan),
            (None, Some(false)) => Some(Propagation::Background),
            (None, None) => None,
        };
        Ok(opts)
    }
}

/// A patch request body and its type.
#[derive(Debug, Clone)]
pub struct PatchBody {
    /// The patch format, from the request's content type.
    pub kind: PatchType,
    /// The raw patch document.
    pub bytes: Vec<u8>,
}

/// What a delete did.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Object),
    /// The object is marked for deletion and waits for finalizers.
    Pending(Object),
}

/// Options of a list.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Parsed `labelSelector`.
    pub labels: Option<LabelSelector>,
    /// Parsed `fieldSelector`.
    pub fields: Option<FieldSelector>,
    /// `limit` (0 = unlimited).
    pub limit: usize,
    /// `continue` token.
    pub continue_token: Option<String>,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The revision of the snapshot listed.
    pub revision: u64,
    /// Matching objects in key order.
    pub items: Vec<Object>,
    /// Token for the next page.
    pub continue_token: Option<String>,
    /// Objects left after this page, when a limit cut it short.
    pub remaining: Option<u64>,
}

/// Snapshots kept for paginated lists, so every page comes from one consistent revision.
#[derive(Default)]
struct PageSnapshots {
    entries: Vec<Snapshot>,
}

const PAGE_SNAPSHOTS: usize = 32;

/// The semantic layer over storage.
pub struct Objects {
    storage: Arc<dyn Storage>,
    registry: Arc<Registry>,
    pages: Mutex<PageSnapshots>,
    webhook_services: crate::admission::ServiceMap,
    /// API aggregation: the front-proxy identity, probes and discovery of extension servers.
    aggregator: crate::aggregator::Aggregator,
    authorization: crate::server::AuthorizationMode,
    /// The optional built-in admission plugins to run.
    plugins: crate::builtin_admission::Plugins,
    /// Whether the server simulates a cluster (what computed kinds report).
    simulating: bool,
}

/// Five random characters of upstream's safe alphabet (generated names, token volumes).
pub(crate) fn generate_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    bytes
        .iter()
        .take(5)
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect()
}

fn names_rule(rule: NameRule) -> names::NameRule {
    match rule {
        NameRule::Subdomain => names::NameRule::Subdomain,
        NameRule::Label => names::NameRule::Label,
        NameRule::PathSegment => names::NameRule::PathSegment,
    }
}

/// Reads an object's labels as a map for selectors.
fn field_value(info: &ResourceInfo, obj: &Value, field: &str) -> Option<String> {
    match field {
        "metadata.name" => Some(meta::name(obj).to_string()),
        "metadata.namespace" => Some(meta::namespace(obj).unwrap_or("").to_string()),
        _ => {
            if info.field_selectors.iter().any(|f| f == field) {
                Some(
                    info.strategy
                        .selectable_field(obj, field)
                        .unwrap_or_default(),
                )
            } else {
                None
            }
        }
    }
}

/// Whether `obj` passes the label and field selectors.
pub fn matches_selectors(
    info: &ResourceInfo,
    obj: &Value,
    labels: Option<&LabelSelector>,
    fields: Option<&FieldSelector>,
) -> bool {
    if let Some(sel) = labels
        && !sel.matches(meta::labels(obj))
    {
        return false;
    }
    if let Some(sel) = fields
        && !sel.matches(|f| field_value(info, obj, f))
    {
        return false;
    }
    true
}

/// Rejects field selectors on fields the resource does not index, as upstream does.
pub fn check_field_selector(info: &ResourceInfo, sel: &FieldSelector) -> Result<(), ApiError> {
    for field in sel.fields() {
        let known = field == "metadata.name"
            || field == "metadata.namespace"
            || info.field_selectors.iter().any(|f| f == field);
        if !known {
            return Err(crate::selector::unsupported_field(field));
        }
    }
    Ok(())
}

/// Whether two objects differ outside `metadata` and `status` (what bumps `generation`).
fn spec_changed(old: &Value, new: &Value) -> bool {
    let (Some(a), Some(b)) = (old.as_object(), new.as_object()) else {
        return old != new;
    };
    let relevant = |m: &Map<String, Value>| -> Vec<(String, Value)> {
        m.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    relevant(a) != relevant(b)
}

impl Objects {
    /// The semantic layer over a storage and a registry.
    pub fn new(storage: Arc<dyn Storage>, registry: Arc<Registry>) -> Self {
        Self {
            storage,
            registry,
            pages: Mutex::new(PageSnapshots::default()),
            webhook_services: Default::default(),
            aggregator: Default::default(),
            authorization: crate::server::AuthorizationMode::default(),
            plugins: crate::builtin_admission::Plugins::default(),
            simulating: false,
        }
    }

    /// The same layer telling computed kinds that the server simulates a cluster.
    pub fn with_simulation(mut self, simulating: bool) -> Self {
        self.simulating = simulating;
        self
    }

    /// The same layer under the server's authorization mode, which admission plugins that
    /// authorize (CertificateApproval, CertificateSigning) consult.
    pub fn with_authorization(mut self, mode: crate::server::AuthorizationMode) -> Self {
        self.authorization = mode;
        self
    }

    /// The same layer running these optional built-in admission plugins.
    pub fn with_admission_plugins(mut self, plugins: crate::builtin_admission::Plugins) -> Self {
        self.plugins = plugins;
        self
    }

    /// Where admission webhook services are reached (`namespace/name:port` → local address).
    pub fn webhook_services(&self) -> &crate::admission::ServiceMap {
        &self.webhook_services
    }

    /// API aggregation state (front-proxy identity, probes, discovered groups).
    pub(crate) fn aggregator(&self) -> &crate::aggregator::Aggregator {
        &self.aggregator
    }

    /// The storage underneath.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The server's authorization mode (controllers that review access consult it).
    pub fn authorization(&self) -> crate::server::AuthorizationMode {
        self.authorization
    }

    /// What strategies may consult: this server's registry and storage.
    fn context(&self) -> Context {
        Context {
            registry: self.registry.clone(),
            storage: self.storage.clone(),
            user: None,
            subresource: None,
            authorization: self.authorization,
            plugins: self.plugins,
        }
    }

    /// The storage key of an object of `info` (in its storage identity's collection).
    pub fn key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
        let (group, resource) = info.storage_identity();
        object_key(
            group,
            resource,
            if info.namespaced { namespace } else { None },
            name,
        )
    }

    /// The storage key prefix of `info`'s collection (in `namespace`, or every one), in its
    /// storage identity.
    pub fn collection(info: &ResourceInfo, namespace: Option<&str>) -> String {
        let (group, resource) = info.storage_identity();
        collection_prefix(
            group,
            resource,
            if info.namespaced { namespace } else { None },
        )
    }

    /// Reads one object.
    pub fn get(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Object, ApiError> {
        if let Some(all) = info.strategy.computed(self.simulating) {
            return all
                .into_iter()
                .find(|o| meta::name(o) == name)
                .map(Arc::new)
                .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name));
        }
        self.storage
            .get(&Self::key(info, namespace, name))
            .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))
    }

    /// Lists objects, paginated over one consistent snapshot.
    pub fn list(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListPage, ApiError> {
        if let Some(all) = info.strategy.computed(self.simulating) {
            return Ok(ListPage {
                revision: self.storage.revision(),
                items: all
                    .into_iter()
                    .filter(|o| {
                        matches_selectors(info, o, opts.labels.as_ref(), opts.fields.as_ref())
                    })
                    .map(Arc::new)
                    .collect(),
                continue_token: None,
                remaining: None,
            });
        }
        let prefix = Self::collection(info, namespace);
        let (snapshot, after) = match &opts.continue_token {
            Some(token) => {
                let (revision, after) = decode_continue(token)?;
                let snapshot = self.page_snapshot(revision).ok_or_else(|| {
                    ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    )
                })?;
                (snapshot, Some(after))
            }
            None => (self.storage.snapshot(), None),
        };
        let mut items = Vec::new();
        let mut last_key: Option<&String> = None;
        let mut remaining: u64 = 0;
        let mut full = false;
        for (key, obj) in snapshot.range(&prefix, after.as_deref()) {
            if !matches_selectors(info, obj, opts.labels.as_ref(), opts.fields.as_ref()) {
                continue;
            }
            if full {
                remaining += 1;
                continue;
            }
            items.push(obj.clone());
            last_key = Some(key);
            if opts.limit > 0 && items.len() >= opts.limit {
                full = true;
            }
        }
        let continue_token = if remaining > 0 {
            last_key.map(|k| encode_continue(snapshot.revision, k))
        } else {
            None
        };
        if continue_token.is_some() {
            self.remember_snapshot(&snapshot);
        }
        Ok(ListPage {
            revision: snapshot.revision,
            items,
            continue_token,
            remaining: (remaining > 0).then_some(remaining),
        })
    }

    fn remember_snapshot(&self, snapshot: &Snapshot) {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        if pages
            .entries
            .iter()
            .any(|s| s.revision == snapshot.revision)
        {
            return;
        }
        if pages.entries.len() >= PAGE_SNAPSHOTS {
            pages.entries.remove(0);
        }
        pages.entries.push(snapshot.clone());
    }

    fn page_snapshot(&self, revision: u64) -> Option<Snapshot> {
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        pages
            .entries
            .iter()
            .find(|s| s.revision == revision)
            .cloned()
            .or_else(|| {
                let current = self.storage.snapshot();
                (current.revision == revision).then_some(current)
            })
    }

    /// Normalises a request body into an object of `info`'s kind.
    fn check_type(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        let Some(map) = obj.as_object_mut() else {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): the body is not a JSON object",
                info.kind
            )));
        };
        let expected = info.api_version();
        match map.get("apiVersion").and_then(Value::as_str) {
            Some(v) if v != expected => {
                // Another served version of the same resource is acceptable for custom resources.
                let (group, version) = v.rsplit_once('/').unwrap_or(("", v));
                if group != info.group {
                    return Err(ApiError::bad_request(format!(
                        "the API version in the data ({v}) does not match the expected API version ({expected})"
                    )));
                }
                let _ = version;
                map.insert("apiVersion".into(), json!(expected));
            }
            Some(_) => {}
            None => {
                map.insert("apiVersion".into(), json!(expected));
            }
        }
        match map.get("kind").and_then(Value::as_str) {
            Some(k) if k != info.kind => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    info.kind
                )));
            }
            Some(_) => {}
            None => {
                map.insert("kind".into(), json!(info.kind));
            }
        }
        if !map.get("metadata").is_none_or(Value::is_object) {
            return Err(ApiError::bad_request(
                "metadata must be an object".to_string(),
            ));
        }
        Ok(())
    }

    fn validate_meta(info: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
        let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let mut causes = names::validate_object_meta(
            &meta,
            info.namespaced,
            names_rule(info.name_rule),
            "metadata",
        );
        if info.strategy.finalizer_names() == crate::kinds::FinalizerNames::Standard {
            causes.extend(names::validate_kube_finalizer_names(
                &meta::finalizers(obj)
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                "metadata.finalizers",
            ));
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                &info.group,
                &info.kind,
                meta::name(obj),
                causes,
            ))
        }
    }

    /// Runs the strategy's decode, default and canonicalize steps, then its validation:
    /// 422 with every cause. Returns the warnings of field validation.
    fn decode_and_validate(
        info: &ResourceInfo,
        obj: &mut Value,
        old: Option<&Value>,
        validation: FieldValidation,
        ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        let strategy = &info.strategy;
        let mut warnings = strategy.decode(info, obj, validation, ctx)?;
        strategy.default(obj);
        // The built-in mutating admission plugins (Priority, LimitRanger, ...).
        crate::builtin_admission::mutate(info, obj, old, ctx)?;
        strategy.canonicalize(obj);
        if let Some(old) = old {
            strategy.prepare_for_update(obj, old);
            if let Some(subresource) = ctx.subresource {
                strategy.prepare_for_subresource_update(subresource, obj, old);
            }
        }
        let (causes, ratcheted) = match old {
            None => (strategy.validate(obj, ctx), Vec::new()),
            Some(old) => strategy.validate_update_warned(obj, old, ctx),
        };
        if !causes.is_empty() {
            return Err(ApiError::invalid(
                &info.group,
                &info.kind,
                meta::name(old.unwrap_or(obj)),
                causes,
            ));
        }
        warnings.extend(ratcheted);
        warnings.extend(match old {
            None => strategy.warnings_on_create(obj),
            Some(old) => strategy.warnings_on_update(obj, old),
        });
        // The built-in validating admission plugins (PodSecurity, ...).
        warnings.extend(crate::builtin_admission::validate(info, obj, old, ctx)?);
        Ok(warnings)
    }

    /// Creates an object.
    pub async fn create(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        self.create_impl(info, namespace, obj, opts, Track::update(opts, None))
            .await
    }

    async fn create_impl(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        mut obj: Value,
        opts: &WriteOptions,
        track: Track,
    ) -> Result<Written, ApiError> {
        Self::check_type(info, &mut obj)?;
        let requested_managed = match &track {
            Track::Update(..) => crate::apply::take_requested_managed_fields(&mut obj, None),
            _ => Default::default(),
        };
        let Some(md) = meta::metadata_mut(&mut obj) else {
            return Err(ApiError::bad_request("metadata must be an object"));
        };
        // Namespace: from the path for namespaced kinds, none for cluster-scoped ones.
        if info.namespaced {
            let body_ns = md.get("namespace").and_then(Value::as_str).unwrap_or("");
            match namespace {
                Some(ns) if body_ns.is_empty() || body_ns == ns => {
                    md.insert("namespace".into(), json!(ns));
                }
                Some(_) => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                None => {
                    return Err(ApiError::bad_request(
                        "the namespace of the object must be set in the request path",
                    ));
                }
            }
        } else {
            md.remove("namespace");
        }
        let name = md
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty()
            && let Some(prefix) = md.get("generateName").and_then(Value::as_str)
            && !prefix.is_empty()
        {
            let generated = format!("{prefix}{}", generate_suffix());
            md.insert("name".into(), json!(generated));
        }
        // System-owned metadata.
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "selfLink",
        ] {
            md.remove(field);
        }
        md.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        md.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
        if info.tracks_generation || info.is_custom() {
            md.insert("generation".into(), json!(1));
        }
        let ctx = Context {
            user: opts.requester.clone(),
            ..self.context()
        };
        info.strategy.prepare_for_create(info, &mut obj, &ctx);
        // Upstream refuses an escalating RBAC write before the kind's validation runs (its RBAC
        // storage checks the decoded object first); the guarded write checks again.
        if let Some(check) = &opts.admission {
            check.check(&obj)?;
        }
        Self::validate_meta(info, &obj)?;
        crate::builtin_admission::await_prerequisites(info, &obj, &ctx).await;
        let warnings =
            Self::decode_and_validate(info, &mut obj, None, opts.field_validation, &ctx)?;
        if let Track::Update(manager, subresource) = &track {
            let api_version = info.api_version();
            crate::apply::record_update(
                info,
                None,
                &mut obj,
                crate::apply::Actor {
                    manager,
                    api_version: &api_version,
                    subresource: *subresource,
                },
                requested_managed,
            );
        }
        let generated_name = name.is_empty();
        let name = meta::name(&obj).to_string();
        // The namespace must exist and not be terminating.
        if info.namespaced {
            let ns = meta::namespace(&obj).unwrap_or("").to_string();
            let ns_key = object_key("", "namespaces", None, &ns);
            match self.storage.get(&ns_key) {
                None => return Err(ApiError::not_found("", "namespaces", &ns)),
                Some(n) if meta::is_deleting(&n) => {
                    return Err(ApiError::forbidden(format!(
                        "{} {name:?} is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                        crate::error::qualified_resource(&info.group, &info.resource)
                    )));
                }
                Some(_) => {}
            }
        }
        let mut warnings = warnings;
        if let Some(user) = &opts.requester {
            let object_namespace = meta::namespace(&obj).map(str::to_string);
            let req = crate::admission::Request {
                objects: self,
                info,
                operation: crate::admission::Operation::Create,
                subresource: None,
                subresource_kind: None,
                generated_name,
                namespace: object_namespace.as_deref(),
                name: &name,
                old: None,
                user,
                dry_run: opts.dry_run,
                options: crate::admission::write_options(opts),
            };
            let system = crate::admission::system_metadata(&obj);
            let mut candidate = Some(obj);
            let admitted = crate::admission::admit(&req, &mut candidate, |mut next| {
                crate::admission::keep_system_metadata(&mut next, &system);
                let w =
                    Self::decode_and_validate(info, &mut next, None, opts.field_validation, &ctx)?;
                warnings = w;
                Ok(next)
            })
            .await?;
            let Some(next) = candidate else {
                return Err(ApiError::internal("admission lost the object it admitted"));
            };
            obj = next;
            warnings.extend(admitted.warnings);
        }
        // A custom resource converted by a webhook is stored in its CRD's storage version.
        let mut obj = crate::conversion::to_storage(self, info, obj).await?;
        let key = Self::key(info, namespace, &name);
        let admission = opts.admission.clone();
        if opts.dry_run {
            if self.storage.get(&key).is_some() {
                return Err(ApiError::already_exists(&info.group, &info.resource, &name));
            }
            info.strategy.complete(&mut obj, None, &ctx)?;
            if let Some(admission) = &admission {
                admission.check(&obj)?;
            }
            return Ok(Written {
                object: Arc::new(info.strategy.convert_for_storage(obj)),
                warnings,
                created: true,
            });
        }
        let group = info.group.clone();
        let resource = info.resource.clone();
        let namespaced = info.namespaced;
        let strategy = info.strategy.clone();
        let committed = self
            .storage
            .update(
                key,
                Box::new(move |cur| {
                    if cur.is_some() {
                        return Err(ApiError::already_exists(&group, &resource, &name));
                    }
                    let mut obj = obj;
                    crate::builtin_admission::quota_in_guarded_write(
                        &group, &resource, namespaced, &obj, None, &ctx,
                    )?;
                    strategy.complete(&mut obj, None, &ctx)?;
                    if let Some(admission) = &admission {
                        admission.check(&obj)?;
                    }
                    Ok(Write::Put(strategy.convert_for_storage(obj)))
                }),
            )
            .await?;
        let object = committed
            .current
            .ok_or_else(|| ApiError::internal("create stored nothing"))?;
        self.after_write(info, Some(&object));
        Ok(Written {
            object,
            warnings,
            created: true,
        })
    }

    /// Hooks that keep derived server state in step with a write (the CRD registry).
    fn after_write(&self, info: &ResourceInfo, object: Option<&Object>) {
        if let Some(obj) = object {
            info.strategy.after_write(&self.registry, obj);
        }
    }

    /// Replaces an object (PUT), on the main resource or the status subresource.
    pub async fn update(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        mut obj: Value,
        part: Part,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        Self::check_type(info, &mut obj)?;
        let body_name = meta::name(&obj).to_string();
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if info.namespaced {
            let body_ns = meta::namespace(&obj).unwrap_or("").to_string();
            if let Some(ns) = namespace
                && !body_ns.is_empty()
                && body_ns != ns
            {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        let requested_rv = meta::resource_version(&obj).to_string();
        let track = Track::update(opts, Track::part(part));
        let mut attempt = 0;
        loop {
            let (obj, rv) = (obj.clone(), requested_rv.clone());
            let result = self
                .write_existing(
                    info,
                    namespace,
                    name,
                    opts,
                    part,
                    track.clone(),
                    move |_| Ok((obj, rv)),
                )
                .await;
            if !self.retry_admitted(info, opts, &result, &mut attempt) || !requested_rv.is_empty() {
                return result;
            }
        }
    }

    /// Rewrites the stored object `name` (if it is still the incarnation `uid`) with `change`
    /// applied to the current object, through the write pipeline of `part` (the kind's update
    /// rules and validation, admission for `opts.requester`), as a controller's
    /// read-modify-write that is retried on conflicts (upstream's `RetryOnConflict`). Answers
    /// `None` when the object is gone or `change` leaves it as it is (nothing is written).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn update_with<F>(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
        part: Part,
        opts: &WriteOptions,
        change: F,
    ) -> Result<Option<Written>, ApiError>
    where
        F: Fn(&mut Value) + Send + Sync + 'static,
    {
        /// Attempts before the conflict is answered (the caller retries later).
        const ATTEMPTS: usize = 8;
        let change = Arc::new(change);
        let key = Self::key(info, namespace, name);
        let mut last = ApiError::conflict(&info.group, &info.resource, name);
        for _ in 0..ATTEMPTS {
            let Some(current) = self.storage.get(&key).filter(|c| meta::uid(c) == uid) else {
                return Ok(None);
            };
            let mut next = (*current).clone();
            change(&mut next);
            if next == *current {
                return Ok(None);
            }
            let (change, uid) = (change.clone(), uid.to_string());
            let gone = ApiError::not_found(&info.group, &info.resource, name);
            let result = self
                .write_existing(
                    info,
                    namespace,
                    name,
                    opts,
                    part,
                    Track::update(opts, Track::part(part)),
                    move |cur| {
                        if meta::uid(cur) != uid {
                            return Err(gone);
                        }
                        let mut next = cur.clone();
                        change(&mut next);
                        Ok((next, String::new()))
                    },
                )
                .await;
            match result {
                Ok(written) => return Ok(Some(written)),
                Err(e) if e.code == 404 => return Ok(None),
                Err(e) if e.code == 409 => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Whether a write that went through admission webhooks met a concurrent change (a 409
    /// from the guarded write after the webhooks) and should be tried again, as upstream's
    /// optimistic update loop does (bounded here, so a hot object cannot hold a request forever).
    fn retry_admitted(
        &self,
        info: &ResourceInfo,
        opts: &WriteOptions,
        result: &Result<Written, ApiError>,
        attempt: &mut u32,
    ) -> bool {
        *attempt += 1;
        matches!(result, Err(e) if e.code == 409 && e.reason == "Conflict")
            && *attempt < 64
            && ((opts.requester.is_some() && crate::admission::configured(self, info))
                || crate::conversion::webhook_of(info).is_some())
    }

    /// Patches an object (PATCH) with a JSON, merge or strategic merge patch.
    pub async fn patch(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        patch: PatchBody,
        part: Part,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let PatchBody {
            kind: patch_type,
            bytes: body,
        } = patch;
        if patch_type == PatchType::Strategic && info.is_custom() {
            return Err(patch::unsupported_patch_type(
                patch::CUSTOM_RESOURCE_PATCH_TYPES,
            ));
        }
        if patch_type == PatchType::Apply {
            return self
                .server_side_apply(info, namespace, name, &body, part, opts)
                .await;
        }
        let track = Track::update(opts, Track::part(part));
        let mut attempt = 0;
        loop {
            let result = self
                .patch_once(
                    info,
                    namespace,
                    name,
                    patch_type,
                    body.clone(),
                    part,
                    opts,
                    track.clone(),
                )
                .await;
            if !self.retry_admitted(info, opts, &result, &mut attempt) {
                return result;
            }
        }
    }

    /// One attempt of [`Objects::patch`].
    #[allow(clippy::too_many_arguments)]
    async fn patch_once(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        patch_type: PatchType,
        body: Vec<u8>,
        part: Part,
        opts: &WriteOptions,
        track: Track,
    ) -> Result<Written, ApiError> {
        let info_for_patch = info.clone();
        self.write_existing(info, namespace, name, opts, part, track, move |current| {
            let strategy = patch::strategic::BuiltinStrategy::new(&info_for_patch);
            let strategy_ref: Option<&dyn patch::strategic::MergeStrategy> =
                if info_for_patch.is_custom() {
                    None
                } else {
                    Some(&strategy)
                };
            let mut patched = patch::apply_patch(patch_type, current, &body, strategy_ref)?;
            Self::check_type(&info_for_patch, &mut patched)?;
            let rv = meta::resource_version(&patched).to_string();
            let rv = if rv == meta::resource_version(current) {
                // The patch did not set a resourceVersion: unconditional.
                String::new()
            } else {
                rv
            };
            Ok((patched, rv))
        })
        .await
    }

    /// Server-side apply (`application/apply-patch+yaml`): creates the object when absent,
    /// otherwise merges the applied configuration with conflict detection (see
    /// [`crate::apply`]). A rejected apply changes nothing.
    async fn server_side_apply(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        body: &[u8],
        part: Part,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let manager = apply_manager(opts)?;
        let mut config = crate::apply::decode_config(body, info)?;
        let body_name = meta::name(&config).to_string();
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if info.namespaced
            && let (Some(ns), Some(body_ns)) = (namespace, meta::namespace(&config))
            && !body_ns.is_empty()
            && body_ns != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        crate::apply::restrict_config(
            &mut config,
            part == Part::Status,
            part == Part::Main && info.status_subresource,
        );
        self.apply_config(
            info,
            namespace,
            name,
            config,
            part,
            Track::part(part),
            &manager,
            opts,
        )
        .await
    }

    /// Server-side apply through `/scale`: the `Scale`'s `spec.replicas` is applied to the
    /// object's replicas path by the manager, on subresource `scale`. Answers the new `Scale`.
    pub async fn apply_scale(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let paths = info.scale.clone().ok_or_else(ApiError::unknown_resource)?;
        let manager = apply_manager(opts)?;
        let scale: Value = serde_yaml_ng::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        let version = scale
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if version != "autoscaling/v1" || scale.get("kind").and_then(Value::as_str) != Some("Scale")
        {
            return Err(ApiError::bad_request(format!(
                "Incorrect version specified in apply patch. Specified patch version: {version}, expected: autoscaling/v1"
            )));
        }
        let shell = json!({
            "apiVersion": info.api_version(),
            "kind": info.kind,
            "metadata": {"name": name},
        });
        let config = match scale.get("spec").and_then(|s| s.get("replicas")) {
            Some(_) => crate::scale::apply_scale(info, &paths, &shell, &scale)?,
            None => shell,
        };
        let written = self
            .apply_config(
                info,
                namespace,
                name,
                config,
                Part::Main,
                Some("scale"),
                &manager,
                opts,
            )
            .await?;
        let obj = crate::conversion::to_served_one(self, info, &written.object).await?;
        Ok(crate::scale::to_scale(info, &paths, &obj))
    }

    /// Applies a decoded configuration (see [`Objects::server_side_apply`]); creates the
    /// object when absent for the main resource.
    #[allow(clippy::too_many_arguments)]
    async fn apply_config(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        config: Value,
        part: Part,
        subresource: Option<&'static str>,
        manager: &str,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let manager = manager.to_string();
        let requested_rv = meta::resource_version(&config).to_string();
        let api_version = info.api_version();
        let force = opts.force;
        let key = Self::key(info, namespace, name);
        for _ in 0..3 {
            if self.storage.get(&key).is_none() {
                if part == Part::Status || subresource.is_some() {
                    return Err(ApiError::not_found(&info.group, &info.resource, name));
                }
                let actor = crate::apply::Actor {
                    manager: &manager,
                    api_version: &api_version,
                    subresource,
                };
                let mut obj = crate::apply::apply(info, None, &config, actor, force)?;
                if let Some(md) = meta::metadata_mut(&mut obj) {
                    md.insert("name".into(), json!(name));
                }
                match self
                    .create_impl(info, namespace, obj, opts, Track::Applied)
                    .await
                {
                    Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                    other => return other,
                }
            }
            let info2 = info.clone();
            let config2 = config.clone();
            let manager2 = manager.clone();
            let api_version2 = api_version.clone();
            let rv = requested_rv.clone();
            let result = self
                .write_existing(
                    info,
                    namespace,
                    name,
                    opts,
                    part,
                    Track::Applied,
                    move |cur| {
                        let actor = crate::apply::Actor {
                            manager: &manager2,
                            api_version: &api_version2,
                            subresource,
                        };
                        let next = crate::apply::apply(&info2, Some(cur), &config2, actor, force)?;
                        Ok((next, rv))
                    },
                )
                .await;
            match result {
                Err(e) if e.code == 404 && part == Part::Main && subresource.is_none() => continue,
                other => return other,
            }
        }
        Err(ApiError::conflict(&info.group, &info.resource, name))
    }

    /// Reads the `/scale` view of an object.
    pub async fn get_scale(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        let paths = info.scale.as_ref().ok_or_else(ApiError::unknown_resource)?;
        let stored = self.get(info, namespace, name)?;
        let obj = crate::conversion::to_served_one(self, info, &stored).await?;
        Ok(crate::scale::to_scale(info, paths, &obj))
    }

    /// Updates replicas through `/scale`: `build` turns the current `Scale` into the requested
    /// one (a PUT body or a patched `Scale`); answers the new `Scale` and the warnings of
    /// admission webhooks and policies (which run for `opts.requester`).
    pub async fn write_scale<F>(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        opts: &WriteOptions,
        build: F,
    ) -> Result<(Value, Vec<String>), ApiError>
    where
        F: FnOnce(&Value) -> Result<Value, ApiError> + Send + 'static,
    {
        if let Some(user) = opts
            .requester
            .as_ref()
            .filter(|_| crate::admission::configured(self, info))
        {
            return self
                .write_scale_admitted(info, namespace, name, opts, user, build)
                .await;
        }
        let paths = info.scale.clone().ok_or_else(ApiError::unknown_resource)?;
        let info2 = info.clone();
        let track = Track::update(opts, Some("scale"));
        let written = self
            .write_existing(
                info,
                namespace,
                name,
                opts,
                Part::Main,
                track,
                move |current| {
                    let scale = crate::scale::to_scale(&info2, &paths, current);
                    let requested = build(&scale)?;
                    let rv = meta::resource_version(&requested).to_string();
                    let rv = if rv == meta::resource_version(current) {
                        String::new()
                    } else {
                        rv
                    };
                    let next = crate::scale::apply_scale(&info2, &paths, current, &requested)?;
                    Ok((next, rv))
                },
            )
            .await?;
        let paths = info.scale.as_ref().ok_or_else(ApiError::unknown_resource)?;
        let obj = crate::conversion::to_served_one(self, info, &written.object).await?;
        Ok((crate::scale::to_scale(info, paths, &obj), written.warnings))
    }

    /// [`Objects::write_scale`] through admission webhooks and policies: they see `Scale`
    /// objects (`autoscaling/v1`, subresource `scale`) and may patch the requested one; the
    /// admitted replicas are then written if the object did not change meanwhile (else the
    /// whole exchange is tried again, unless the client sent a resourceVersion).
    async fn write_scale_admitted<F>(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        opts: &WriteOptions,
        user: &crate::auth::UserInfo,
        build: F,
    ) -> Result<(Value, Vec<String>), ApiError>
    where
        F: FnOnce(&Value) -> Result<Value, ApiError> + Send + 'static,
    {
        let paths = info.scale.clone().ok_or_else(ApiError::unknown_resource)?;
        let key = Self::key(info, namespace, name);
        let mut build = Some(build);
        let mut requested_scale: Option<Value> = None;
        for _ in 0..64 {
            let stored = self
                .storage
                .get(&key)
                .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
            let view = crate::conversion::to_served_one(self, info, &stored).await?;
            let old_scale = crate::scale::to_scale(info, &paths, &view);
            // The client's Scale is computed once (a patch applies to the first Scale read).
            let requested = match (&requested_scale, build.take()) {
                (Some(r), _) => r.clone(),
                (None, Some(build)) => {
                    let r = build(&old_scale)?;
                    requested_scale = Some(r.clone());
                    r
                }
                (None, None) => return Err(ApiError::internal("scale request lost")),
            };
            let client_rv = meta::resource_version(&requested).to_string();
            let unconditional =
                client_rv.is_empty() || client_rv == meta::resource_version(&old_scale);
            if !client_rv.is_empty() && client_rv != meta::resource_version(&view) {
                return Err(ApiError::conflict(&info.group, &info.resource, name));
            }
            // The requested Scale carries the object's identity, as upstream's does.
            let mut candidate_scale = requested.clone();
            if let (Some(md), Some(old_md)) = (
                meta::metadata_mut(&mut candidate_scale),
                meta::metadata(&old_scale),
            ) {
                for (k, v) in old_md {
                    md.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            // Invalid replicas are refused before any webhook is called.
            crate::scale::apply_scale(info, &paths, &view, &candidate_scale)?;
            let req = crate::admission::Request {
                objects: self,
                info,
                operation: crate::admission::Operation::Update,
                subresource: Some("scale"),
                subresource_kind: Some(("autoscaling", "v1", "Scale")),
                generated_name: false,
                namespace,
                name,
                old: Some(&old_scale),
                user,
                dry_run: opts.dry_run,
                options: crate::admission::write_options(opts),
            };
            let mut candidate = Some(candidate_scale.clone());
            let admitted = crate::admission::admit(&req, &mut candidate, |patched| {
                crate::scale::apply_scale(info, &paths, &view, &patched)?;
                Ok(patched)
            })
            .await?;
            let admitted_scale = candidate.unwrap_or(candidate_scale);
            let expected_rv = meta::resource_version(&view).to_string();
            let scale_for_write = admitted_scale.clone();
            let paths2 = paths.clone();
            let info2 = info.clone();
            let mut no_webhooks = opts.clone();
            no_webhooks.requester = None;
            let result = self
                .write_existing(
                    info,
                    namespace,
                    name,
                    &no_webhooks,
                    Part::Main,
                    Track::update(opts, Some("scale")),
                    move |current| {
                        let next =
                            crate::scale::apply_scale(&info2, &paths2, current, &scale_for_write)?;
                        Ok((next, expected_rv))
                    },
                )
                .await;
            match result {
                Err(e) if e.code == 409 && e.reason == "Conflict" && unconditional => continue,
                Err(e) => return Err(e),
                Ok(written) => {
                    let obj = crate::conversion::to_served_one(self, info, &written.object).await?;
                    return Ok((
                        crate::scale::to_scale(info, &paths, &obj),
                        admitted.warnings,
                    ));
                }
            }
        }
        Err(ApiError::conflict(&info.group, &info.resource, name))
    }

    /// The shared update path: `build` turns the current object into the requested one plus
    /// the resourceVersion precondition ("" for none); the rules of update apply to the result.
    #[allow(clippy::too_many_arguments)]
    async fn write_existing<F>(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        opts: &WriteOptions,
        part: Part,
        track: Track,
        build: F,
    ) -> Result<Written, ApiError>
    where
        F: FnOnce(&Value) -> Result<(Value, String), ApiError> + Send + 'static,
    {
        let key = Self::key(info, namespace, name);
        let info2 = info.clone();
        let name2 = name.to_string();
        let dry_run = opts.dry_run;
        let validation = opts.field_validation;
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let warnings2 = warnings.clone();
        let ctx = Context {
            user: opts.requester.clone(),
            ..self.context()
        };
        let admission = opts.admission.clone();
        // A custom resource converted by a webhook: the current object is converted before the
        // guarded write (which must then find it unchanged), the result after it.
        let converted = match crate::conversion::webhook_of(info) {
            Some(_) => {
                let stored = self
                    .storage
                    .get(&key)
                    .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
                let view = crate::conversion::to_served_one(self, info, &stored).await?;
                Some((stored, view))
            }
            None => None,
        };
        let converted_view = converted.as_ref().map(|(_, view)| view.clone());
        let decide = move |cur: Option<&Object>| -> Result<Write, ApiError> {
            let Some(stored) = cur else {
                return Err(ApiError::not_found(&info2.group, &info2.resource, &name2));
            };
            // The update happens in the served version's shape; what is stored is converted back.
            let view = match &converted {
                Some((read, view))
                    if meta::resource_version(read) == meta::resource_version(stored) =>
                {
                    Some((**view).clone())
                }
                Some(_) => return Err(ApiError::conflict(&info2.group, &info2.resource, &name2)),
                None => info2.strategy.convert_stored(&info2, stored),
            };
            let cur: &Value = view.as_ref().unwrap_or(stored);
            let (requested, rv) = build(cur)?;
            if !rv.is_empty() && rv != meta::resource_version(cur) {
                return Err(ApiError::conflict(&info2.group, &info2.resource, &name2));
            }
            // An escalating RBAC change is refused before the kind's validation, as upstream's
            // RBAC storage checks the updated object before its store validates it.
            if let Some(admission) = &admission {
                admission.check(&requested)?;
            }
            let mut requested = requested;
            let requested_fields = match &track {
                Track::Update(..) => {
                    crate::apply::take_requested_managed_fields(&mut requested, Some(cur))
                }
                _ => Default::default(),
            };
            let requested_managed = meta::metadata(&requested)
                .and_then(|m| m.get("managedFields"))
                .cloned();
            let (mut next, w) = prepare_update(&info2, cur, requested, part, validation, &ctx)?;
            match &track {
                Track::None => {}
                Track::Update(manager, subresource) => {
                    let api_version = info2.api_version();
                    crate::apply::record_update(
                        &info2,
                        Some(cur),
                        &mut next,
                        crate::apply::Actor {
                            manager,
                            api_version: &api_version,
                            subresource: *subresource,
                        },
                        requested_fields,
                    );
                }
                Track::Applied => {
                    if let Some(md) = meta::metadata_mut(&mut next) {
                        match requested_managed {
                            Some(m) => md.insert("managedFields".into(), m),
                            None => md.remove("managedFields"),
                        };
                    }
                }
            }
            *warnings2.lock().unwrap_or_else(|e| e.into_inner()) = w;
            if let Some(admission) = &admission {
                admission.check(&next)?;
            }
            if converted.is_some() {
                // Converted to the stored shape after this, outside the guarded write.
                return Ok(if &next == cur {
                    Write::Unchanged
                } else {
                    Write::Put(next)
                });
            }
            let next = info2.strategy.convert_for_storage(next);
            if next == **stored {
                return Ok(Write::Unchanged);
            }
            if removed_by_update(info2.strategy.as_ref(), &next) {
                return Ok(Write::Delete);
            }
            Ok(Write::Put(next))
        };
        // Admission webhooks see the current object and the update; the write then happens
        // only if the object did not change meanwhile.
        let webhooks = opts
            .requester
            .as_ref()
            .filter(|_| crate::admission::configured(self, info));
        let decide: crate::storage::UpdateFn = if webhooks.is_some() || converted_view.is_some() {
            let cur = self.storage.get(&key);
            let write = decide(cur.as_ref())?;
            let update = AdmittedUpdate {
                info,
                namespace,
                name,
                opts,
                part,
                user: webhooks,
                converted: converted_view,
            };
            match self.admit_update(update, cur, write, &warnings).await? {
                Ok(written) => return Ok(written),
                Err(recheck) => recheck,
            }
        } else {
            Box::new(decide)
        };
        if dry_run {
            let cur = self.storage.get(&key);
            let object = match decide(cur.as_ref())? {
                Write::Put(next) => Arc::new(next),
                Write::Delete | Write::Unchanged => {
                    cur.ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?
                }
            };
            let warnings = std::mem::take(&mut *warnings.lock().unwrap_or_else(|e| e.into_inner()));
            return Ok(Written {
                object,
                warnings,
                created: false,
            });
        }
        let result = self.storage.update(key, Box::new(decide)).await;
        let warnings = std::mem::take(&mut *warnings.lock().unwrap_or_else(|e| e.into_inner()));
        match result {
            Ok(Committed { event, current }) => {
                let object = match (current, event) {
                    (Some(obj), _) => {
                        self.after_write(info, Some(&obj));
                        obj
                    }
                    (None, Some(ev)) => {
                        // The write removed the object (its last finalizer went).
                        info.strategy.after_delete(&self.registry, &ev.object);
                        ev.object.clone()
                    }
                    (None, None) => {
                        return Err(ApiError::not_found(&info.group, &info.resource, name));
                    }
                };
                Ok(Written {
                    object,
                    warnings,
                    created: false,
                })
            }
            Err(err) => Err(err),
        }
    }

    /// Runs admission webhooks on an update computed from the current object (`write`, from
    /// `cur`): the object is validated again when a webhook changed it. A dry run answers the
    /// result (`Ok`); otherwise the write to commit is answered (`Err`), refused with a conflict
    /// if the object changed since `cur` was read.
    async fn admit_update(
        &self,
        update: AdmittedUpdate<'_>,
        cur: Option<Object>,
        write: Write,
        warnings: &Arc<Mutex<Vec<String>>>,
    ) -> Result<Result<Written, crate::storage::UpdateFn>, ApiError> {
        let AdmittedUpdate {
            info,
            namespace,
            name,
            opts,
            part,
            user,
            converted,
        } = update;
        let not_found = || ApiError::not_found(&info.group, &info.resource, name);
        let stored = cur.ok_or_else(not_found)?;
        let converting = converted.is_some();
        let old = converted.unwrap_or_else(|| served(info, &stored));
        let next = match &write {
            Write::Put(next) if converting => Arc::new(next.clone()),
            Write::Put(next) => served(info, &Arc::new(next.clone())),
            Write::Unchanged => old.clone(),
            Write::Delete => {
                // The last finalizer went: nothing is left to admit.
                let expected = meta::resource_version(&stored).to_string();
                let (group, resource, name) =
                    (info.group.clone(), info.resource.clone(), name.to_string());
                return Ok(Err(Box::new(move |now: Option<&Object>| match now {
                    Some(now) if meta::resource_version(now) == expected => Ok(Write::Delete),
                    Some(_) => Err(ApiError::conflict(&group, &resource, &name)),
                    None => Err(ApiError::not_found(&group, &resource, &name)),
                })));
            }
        };
        let managed = meta::metadata(&next)
            .and_then(|m| m.get("managedFields"))
            .cloned();
        let ctx = Context {
            user: opts.requester.clone(),
            ..self.context()
        };
        let mut revalidated = None;
        let mut candidate = Some((*next).clone());
        let mut admitted_warnings = Vec::new();
        if let Some(user) = user {
            let req = crate::admission::Request {
                objects: self,
                info,
                operation: crate::admission::Operation::Update,
                subresource: Track::part(part),
                subresource_kind: None,
                generated_name: false,
                namespace,
                name,
                old: Some(old.as_ref()),
                user,
                dry_run: opts.dry_run,
                options: crate::admission::write_options(opts),
            };
            let admitted = crate::admission::admit(&req, &mut candidate, |patched| {
                let (mut next, w) =
                    prepare_update(info, &old, patched, part, opts.field_validation, &ctx)?;
                if let Some(md) = meta::metadata_mut(&mut next) {
                    match &managed {
                        Some(m) => md.insert("managedFields".into(), m.clone()),
                        None => md.remove("managedFields"),
                    };
                }
                revalidated = Some(w);
                Ok(next)
            })
            .await?;
            admitted_warnings = admitted.warnings;
        }
        let warnings = {
            let mut w = warnings.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = revalidated {
                *w = r;
            }
            w.extend(admitted_warnings);
            w.clone()
        };
        let result = candidate.unwrap_or_else(|| (*next).clone());
        if let Some(check) = &opts.admission {
            check.check(&result)?;
        }
        // RBAC escalation is checked again inside the guarded write, where roles cannot change.
        let check = opts.admission.clone().map(|c| (c, result.clone()));
        // So is ResourceQuota, where other writes cannot change the namespace's usage.
        let quota = (
            Context {
                subresource: Track::part(part),
                ..ctx.clone()
            },
            (*old).clone(),
            result.clone(),
            info.namespaced,
        );
        let to_store = info.strategy.convert_for_storage(result);
        let to_store = crate::conversion::to_storage(self, info, to_store).await?;
        if opts.dry_run {
            return Ok(Ok(Written {
                object: Arc::new(to_store),
                warnings,
                created: false,
            }));
        }
        let expected = meta::resource_version(&stored).to_string();
        let (group, resource, name) = (info.group.clone(), info.resource.clone(), name.to_string());
        let strategy = info.strategy.clone();
        Ok(Err(Box::new(move |now: Option<&Object>| {
            let Some(now) = now else {
                return Err(ApiError::not_found(&group, &resource, &name));
            };
            if meta::resource_version(now) != expected {
                return Err(ApiError::conflict(&group, &resource, &name));
            }
            if let Some((check, candidate)) = &check {
                check.check(candidate)?;
            }
            let (quota_ctx, old, next, namespaced) = &quota;
            crate::builtin_admission::quota_in_guarded_write(
                &group,
                &resource,
                *namespaced,
                next,
                Some(old),
                quota_ctx,
            )?;
            if to_store == **now {
                return Ok(Write::Unchanged);
            }
            if removed_by_update(strategy.as_ref(), &to_store) {
                return Ok(Write::Delete);
            }
            Ok(Write::Put(to_store))
        })))
    }

    /// Deletes an object, honouring finalizers, preconditions and propagation.
    pub async fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        self.delete_warned(info, namespace, name, opts)
            .await
            .map(|(deleted, _)| deleted)
    }

    /// [`Objects::delete`], answering also the admission webhooks' and policies' warnings.
    pub async fn delete_warned(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(Deleted, Vec<String>), ApiError> {
        let mut warnings = Vec::new();
        let key = Self::key(info, namespace, name);
        let info2 = info.clone();
        let name2 = name.to_string();
        let opts2 = opts.clone();
        // Set when the decision is a graceful delete with period 0 and no finalizers: the
        // object is written with its deletion timestamp, then removed (upstream's
        // `updateForGracefulDeletionAndFinalizers` followed by the storage delete).
        let remove_after = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let remove_after2 = remove_after.clone();
        let decide = move |cur: Option<&Object>| -> Result<Write, ApiError> {
            remove_after2.store(false, std::sync::atomic::Ordering::SeqCst);
            let Some(cur) = cur else {
                return Err(ApiError::not_found(&info2.group, &info2.resource, &name2));
            };
            check_delete_preconditions(&info2, &name2, &opts2, cur)?;
            info2.strategy.validate_delete(cur)?;
            // Negative values are read as 1 on the delete path.
            let requested = opts2
                .grace_period_seconds
                .map(|g| if g < 0 { 1 } else { g });
            let grace = match info2.strategy.graceful_delete_period(cur, requested) {
                Some(period) => before_delete(cur, requested, period, jiff::Timestamp::now()),
                None => Grace::NotGraceful,
            };
            if grace == Grace::Pending {
                // Already being deleted, not sooner than asked: nothing changes (not even the
                // finalizers the propagation policy would set).
                return Ok(Write::Unchanged);
            }
            let mut finalizers = meta::finalizers(cur);
            let policy = opts2.propagation.unwrap_or(Propagation::Background);
            let gc_finalizer = match policy {
                Propagation::Foreground => Some(FOREGROUND_FINALIZER),
                Propagation::Orphan => Some(ORPHAN_FINALIZER),
                Propagation::Background => None,
            };
            let mut changed_finalizers = false;
            if let Some(f) = gc_finalizer {
                // Only add GC finalizers when there can be dependents to handle.
                if !finalizers.iter().any(|x| x == f) {
                    finalizers.retain(|x| x != FOREGROUND_FINALIZER && x != ORPHAN_FINALIZER);
                    finalizers.push(f.to_string());
                    changed_finalizers = true;
                }
            } else if opts2.propagation.is_some() {
                let before = finalizers.len();
                finalizers.retain(|x| x != FOREGROUND_FINALIZER && x != ORPHAN_FINALIZER);
                changed_finalizers = before != finalizers.len();
            }
            let before = finalizers.len();
            let plan = info2.strategy.prepare_for_delete(cur, &mut finalizers);
            changed_finalizers |= finalizers.len() != before;
            if plan == DeletePlan::MarkOnly {
                if meta::is_deleting(cur) {
                    return Ok(Write::Unchanged);
                }
                let mut next = (**cur).clone();
                mark_deletion_started(&mut next);
                info2.strategy.mark_deleting(&mut next);
                return Ok(Write::Put(next));
            }
            if let Grace::Graceful { timestamp, period } = grace {
                let mut next = (**cur).clone();
                mark_graceful_deletion(&mut next, timestamp, period);
                if changed_finalizers {
                    meta::set_finalizers(&mut next, &finalizers);
                }
                info2.strategy.mark_deleting(&mut next);
                if period == 0 && finalizers.is_empty() {
                    remove_after2.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                return Ok(Write::Put(next));
            }
            if finalizers.is_empty() {
                return Ok(Write::Delete);
            }
            if meta::is_deleting(cur) && !changed_finalizers {
                return Ok(Write::Unchanged);
            }
            let mut next = (**cur).clone();
            meta::set_finalizers(&mut next, &finalizers);
            mark_deletion_started(&mut next);
            info2.strategy.mark_deleting(&mut next);
            Ok(Write::Put(next))
        };
        if let Some(user) = &opts.requester
            && let Some(stored) = self.storage.get(&key)
        {
            let old = if crate::conversion::webhook_of(info).is_some()
                && crate::admission::configured(self, info)
            {
                crate::conversion::to_served_one(self, info, &stored).await?
            } else {
                served(info, &stored)
            };
            let req = crate::admission::Request {
                objects: self,
                info,
                operation: crate::admission::Operation::Delete,
                subresource: None,
                subresource_kind: None,
                generated_name: false,
                namespace,
                name,
                old: Some(old.as_ref()),
                user,
                dry_run: opts.dry_run,
                options: crate::admission::delete_options(opts),
            };
            warnings = crate::admission::admit(&req, &mut None, Ok).await?.warnings;
        }
        let removing = |remove_after: &std::sync::atomic::AtomicBool| {
            remove_after.load(std::sync::atomic::Ordering::SeqCst)
        };
        if opts.dry_run {
            let cur = self.storage.get(&key);
            let deleted = match decide(cur.as_ref())? {
                // As upstream: a dry run of a graceful delete with period 0 answers the object
                // as the first write would leave it, deleted.
                Write::Put(next) if removing(&remove_after) => Deleted::Gone(Arc::new(next)),
                Write::Put(next) => Deleted::Pending(Arc::new(next)),
                Write::Delete | Write::Unchanged => cur
                    .map(Deleted::Gone)
                    .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?,
            };
            return Ok((deleted, warnings));
        }
        let Committed { event, current } =
            self.storage.update(key.clone(), Box::new(decide)).await?;
        if let Some(last) = current.as_ref().filter(|_| removing(&remove_after)) {
            let deleted = self.remove_now(info, key, name, opts, last).await?;
            return Ok((Deleted::Gone(deleted), warnings));
        }
        let deleted = match (current, event) {
            (Some(obj), _) => {
                // Marked for deletion, still stored: derived state follows the mark (a
                // terminating CRD's discovery).
                self.after_write(info, Some(&obj));
                Deleted::Pending(obj)
            }
            (None, Some(ev)) => {
                info.strategy.after_delete(&self.registry, &ev.object);
                Deleted::Gone(ev.object.clone())
            }
            (None, None) => return Err(ApiError::not_found(&info.group, &info.resource, name)),
        };
        Ok((deleted, warnings))
    }

    /// The second half of a graceful delete with period 0 (upstream's storage delete after
    /// `updateForGracefulDeletionAndFinalizers`): removes the object `last` left at `key`, under
    /// the request's uid precondition and, when it had one, a resourceVersion precondition on
    /// `last`. Gone meanwhile counts as deleted (its last state is `last`).
    async fn remove_now(
        &self,
        info: &Arc<ResourceInfo>,
        key: String,
        name: &str,
        opts: &DeleteOptions,
        last: &Object,
    ) -> Result<Object, ApiError> {
        let checks = DeleteOptions {
            precondition_resource_version: opts
                .precondition_resource_version
                .as_ref()
                .map(|_| meta::resource_version(last).to_string()),
            ..opts.clone()
        };
        let info2 = info.clone();
        let name2 = name.to_string();
        let removed = self
            .storage
            .update(
                key,
                Box::new(move |cur| {
                    let Some(cur) = cur else {
                        return Err(ApiError::not_found(&info2.group, &info2.resource, &name2));
                    };
                    check_delete_preconditions(&info2, &name2, &checks, cur)?;
                    Ok(Write::Delete)
                }),
            )
            .await;
        match removed {
            Ok(Committed {
                event: Some(ev),
                current: None,
            }) => {
                info.strategy.after_delete(&self.registry, &ev.object);
                Ok(ev.object.clone())
            }
            Ok(_) => Ok(last.clone()),
            // Someone else removed it first (upstream's `ignoreNotFound`).
            Err(e) if e.code == 404 => {
                info.strategy.after_delete(&self.registry, last);
                Ok(last.clone())
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes every object matching the selectors in a namespace (or everywhere).
    pub async fn delete_collection(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Object>, ApiError> {
        let page = self.list(
            info,
            namespace,
            &ListOptions {
                labels: list.labels.clone(),
                fields: list.fields.clone(),
                limit: 0,
                continue_token: None,
            },
        )?;
        let mut deleted = Vec::new();
        for obj in page.items {
            let ns = meta::namespace(&obj).map(str::to_string);
            match self
                .delete(info, ns.as_deref(), meta::name(&obj), opts)
                .await
            {
                Ok(Deleted::Gone(o)) | Ok(Deleted::Pending(o)) => deleted.push(o),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

/// The object as clients of `info`'s version see it: converted by the kind's strategy when
/// stored in another version's shape, else the stored object with `info`'s `apiVersion`
/// (custom resources may be stored in another version of the same group).
pub fn served(info: &ResourceInfo, obj: &Object) -> Object {
    if let Some(mut converted) = info.strategy.convert_stored(info, obj) {
        if let Some(map) = converted.as_object_mut() {
            map.insert("apiVersion".into(), json!(info.api_version()));
        }
        return Arc::new(converted);
    }
    let expected = info.api_version();
    if obj.get("apiVersion").and_then(Value::as_str) == Some(expected.as_str()) {
        return obj.clone();
    }
    let mut copy = (**obj).clone();
    if let Some(map) = copy.as_object_mut() {
        map.insert("apiVersion".into(), json!(expected));
    }
    Arc::new(copy)
}

/// Refuses a delete whose `preconditions` (uid, resourceVersion) `cur` does not meet: 409.
fn check_delete_preconditions(
    info: &ResourceInfo,
    name: &str,
    opts: &DeleteOptions,
    cur: &Value,
) -> Result<(), ApiError> {
    if let Some(uid) = &opts.precondition_uid
        && uid != meta::uid(cur)
    {
        return Err(ApiError::conflict_because(
            &info.group,
            &info.resource,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta::uid(cur)
            ),
        ));
    }
    if let Some(rv) = &opts.precondition_resource_version
        && rv != meta::resource_version(cur)
    {
        return Err(ApiError::conflict_because(
            &info.group,
            &info.resource,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                meta::resource_version(cur)
            ),
        ));
    }
    Ok(())
}

/// What a delete does to an object of a kind with graceful deletion (upstream's
/// `rest.BeforeDelete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grace {
    /// Not graceful: removed now, or marked with grace period 0 while finalizers remain (an
    /// object already being deleted with grace period 0, or without one).
    NotGraceful,
    /// Already being deleted gracefully, and the request does not shorten it: nothing changes.
    Pending,
    /// The object gets this deletion timestamp and grace period (removed at once when the
    /// period is 0 and no finalizer remains).
    Graceful {
        /// `metadata.deletionTimestamp`.
        timestamp: jiff::Timestamp,
        /// `metadata.deletionGracePeriodSeconds`.
        period: i64,
    },
}

/// Upstream's `rest.BeforeDelete` for `cur`, of a kind whose strategy gave `period` for the
/// `gracePeriodSeconds` asked for (`requested`, never negative), at `now`. A first delete sets
/// the deletion timestamp `period` from now; while the object is being deleted gracefully a
/// delete may only shorten the period (the timestamp moves earlier by the difference, never
/// before now; a positive period already over becomes 1).
fn before_delete(cur: &Value, requested: Option<i64>, period: i64, now: jiff::Timestamp) -> Grace {
    let Some(deleted_at) = meta::meta_str(cur, "deletionTimestamp") else {
        return Grace::Graceful {
            timestamp: add_seconds(now, period),
            period,
        };
    };
    let current = meta::metadata(cur)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .map(|g| if g < 0 { 1 } else { g });
    let Some(current) = current.filter(|g| *g != 0) else {
        // Deleted with period 0 earlier (or without one): the object goes now.
        return Grace::NotGraceful;
    };
    let Some(mut requested) = requested else {
        return Grace::Pending;
    };
    if requested >= current {
        return Grace::Pending;
    }
    let Ok(deleted_at) = deleted_at.parse::<jiff::Timestamp>() else {
        return Grace::NotGraceful;
    };
    let mut timestamp = add_seconds(add_seconds(deleted_at, -current), requested);
    if timestamp < now {
        timestamp = now;
        if requested != 0 {
            requested = 1;
        }
    }
    Grace::Graceful {
        timestamp,
        period: requested,
    }
}

/// `at` moved by `seconds` (kept when out of range).
fn add_seconds(at: jiff::Timestamp, seconds: i64) -> jiff::Timestamp {
    at.checked_add(jiff::SignedDuration::from_secs(seconds))
        .unwrap_or(at)
}

/// A timestamp as objects carry it (RFC 3339, whole seconds, UTC).
fn rfc3339(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Bumps `metadata.generation` of an object whose deletion starts (when it has one), as
/// upstream does for the first delete.
fn bump_generation_on_deletion(md: &mut Map<String, Value>) {
    if md.contains_key("deletionTimestamp") {
        return;
    }
    if let Some(generation) = md
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g > 0)
    {
        md.insert("generation".into(), json!(generation + 1));
    }
}

/// Marks an object deleted gracefully (upstream's `BeforeDelete`): `deletionTimestamp` and
/// `deletionGracePeriodSeconds`, and on the first delete a new `generation`.
fn mark_graceful_deletion(obj: &mut Value, timestamp: jiff::Timestamp, period: i64) {
    if let Some(md) = meta::metadata_mut(obj) {
        bump_generation_on_deletion(md);
        md.insert("deletionTimestamp".into(), json!(rfc3339(timestamp)));
        md.insert("deletionGracePeriodSeconds".into(), json!(period));
    }
}

/// Marks an object whose deletion waits for finalizers (upstream's `markAsDeleting`): the
/// deletion timestamp is now (kept when already set and not later), the grace period 0, and
/// on the first delete a new `generation`.
fn mark_deletion_started(obj: &mut Value) {
    let now = jiff::Timestamp::now();
    if let Some(md) = meta::metadata_mut(obj) {
        bump_generation_on_deletion(md);
        let later = md
            .get("deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .is_some_and(|t| t > now);
        if !md.contains_key("deletionTimestamp") || later {
            md.insert("deletionTimestamp".into(), json!(rfc3339(now)));
        }
        md.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
}

/// Whether an update leaves a deleted object with nothing to wait for, so the update removes
/// it (upstream's `shouldDeleteDuringUpdate`): no finalizer left and a grace period over (0 or
/// none; an object deleted gracefully waits for a delete with period 0).
fn removed_by_update(strategy: &dyn crate::kinds::Strategy, next: &Value) -> bool {
    let grace = meta::metadata(next)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    meta::is_deleting(next)
        && meta::finalizers(next).is_empty()
        && grace == 0
        && !strategy.blocks_removal(next)
}

/// Applies the update rules to a requested object given the current one.
fn prepare_update(
    info: &ResourceInfo,
    cur: &Value,
    mut requested: Value,
    part: Part,
    validation: FieldValidation,
    ctx: &Context,
) -> Result<(Value, Vec<String>), ApiError> {
    let mut next = match part {
        Part::Status => {
            // Only status changes count; everything else stays as stored.
            let mut next = cur.clone();
            match requested.get_mut("status").map(Value::take) {
                Some(status) => {
                    if let Some(map) = next.as_object_mut() {
                        map.insert("status".into(), status);
                    }
                }
                None => strip_status(&mut next),
            }
            next
        }
        Part::Main => {
            if info.status_subresource {
                match cur.get("status") {
                    Some(status) => {
                        if let Some(map) = requested.as_object_mut() {
                            map.insert("status".into(), status.clone());
                        }
                    }
                    None => strip_status(&mut requested),
                }
            }
            requested
        }
        // The kind's strategy keeps what the subresource may not change.
        Part::Subresource(_) => requested,
    };
    let ctx = &Context {
        subresource: Track::part(part),
        ..ctx.clone()
    };
    // System metadata is kept from the stored object.
    let cur_meta = meta::metadata(cur).cloned().unwrap_or_default();
    if let Some(md) = meta::metadata_mut(&mut next) {
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
            "name",
            "resourceVersion",
        ] {
            match cur_meta.get(field) {
                Some(v) => {
                    md.insert(field.into(), v.clone());
                }
                None => {
                    md.remove(field);
                }
            }
        }
        md.remove("selfLink");
    }
    // No new finalizers once deletion started.
    if meta::is_deleting(cur) {
        let old: Vec<String> = meta::finalizers(cur);
        let added: Vec<String> = meta::finalizers(&next)
            .into_iter()
            .filter(|f| !old.contains(f))
            .collect();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            let message = format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                quoted.join(", ")
            );
            return Err(ApiError::invalid(
                &info.group,
                &info.kind,
                meta::name(cur),
                vec![Cause::forbidden("metadata.finalizers", &message)],
            ));
        }
    }
    Objects::validate_meta(info, &next)?;
    let warnings = Objects::decode_and_validate(info, &mut next, Some(cur), validation, ctx)?;
    info.strategy.complete(&mut next, Some(cur), ctx)?;
    if (info.tracks_generation || info.is_custom()) && spec_changed(cur, &next) {
        let generation = cur_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        if let Some(md) = meta::metadata_mut(&mut next) {
            md.insert("generation".into(), json!(generation));
        }
    }
    Ok((next, warnings))
}

/// The field manager of an apply: required, at most 128 bytes, printable (422 on
/// `PatchOptions.meta.k8s.io` otherwise, as upstream).
fn apply_manager(opts: &WriteOptions) -> Result<String, ApiError> {
    let manager = opts.field_manager.clone().unwrap_or_default();
    let mut causes = Vec::new();
    if manager.is_empty() {
        causes.push(Cause::required(
            "fieldManager",
            "is required for apply patch",
        ));
    }
    causes.extend(crate::apply::validate_field_manager(&manager));
    if !causes.is_empty() {
        return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", causes));
    }
    Ok(manager)
}

fn encode_continue(revision: u64, key: &str) -> String {
    use base64::Engine;
    let token = json!({"rv": revision, "start": key});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    use base64::Engine;
    let invalid = || ApiError::bad_request(format!("invalid continue token: {token:?}"));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&raw).map_err(|_| invalid())?;
    let rv = value
        .get("rv")
        .and_then(Value::as_u64)
        .ok_or_else(invalid)?;
    let start = value
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(invalid)?;
    Ok((rv, start.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let token = encode_continue(42, "/core/configmaps/ns/a");
        assert_eq!(
            decode_continue(&token).ok(),
            Some((42, "/core/configmaps/ns/a".to_string()))
        );
        assert!(decode_continue("%%%").is_err());
    }

    #[test]
    fn generation_ignores_metadata_and_status() {
        let a = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = json!({"metadata": {}, "spec": {"x": 1}, "status": {"y": 2}});
        assert!(!spec_changed(&a, &b));
        let c = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(spec_changed(&a, &c));
    }

    #[test]
    fn graceful_deletion_follows_upstream_before_delete() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap_or_default();
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap_or_default();
        let live = json!({"metadata": {"name": "p"}});
        let deleting = |at: &str, grace: Option<i64>| {
            let mut obj = json!({"metadata": {"name": "p", "deletionTimestamp": at}});
            if let Some(g) = grace {
                obj["metadata"]["deletionGracePeriodSeconds"] = json!(g);
            }
            obj
        };
        let graceful = |timestamp: &str, period| Grace::Graceful {
            timestamp: at(timestamp),
            period,
        };
        // (object, requested, the strategy's period, decision)
        let table = [
            // A first delete: the period from now (0: at once, through the graceful path).
            (live.clone(), None, 30, graceful("2026-01-01T00:00:30Z", 30)),
            (
                live.clone(),
                Some(0),
                0,
                graceful("2026-01-01T00:00:00Z", 0),
            ),
            // Being deleted (30s from 23:59:50, so due at 00:00:20): only shorter counts.
            (
                deleting("2026-01-01T00:00:20Z", Some(30)),
                None,
                30,
                Grace::Pending,
            ),
            (
                deleting("2026-01-01T00:00:20Z", Some(30)),
                Some(30),
                30,
                Grace::Pending,
            ),
            (
                deleting("2026-01-01T00:00:20Z", Some(30)),
                Some(60),
                60,
                Grace::Pending,
            ),
            (
                deleting("2026-01-01T00:00:20Z", Some(30)),
                Some(25),
                25,
                graceful("2026-01-01T00:00:15Z", 25),
            ),
            // Shortened into the past: now, with the shortest graceful period (or 0).
            (
                deleting("2026-01-01T00:00:20Z", Some(30)),
                Some(5),
                5,
                graceful("2026-01-01T00:00:00Z", 1),
            ),
            (
                deleting("2026-01-01T00:00:20Z", Some(30)),
                Some(0),
                0,
                graceful("2026-01-01T00:00:00Z", 0),
            ),
            // Deleted with period 0 before (or with none): removed now.
            (
                deleting("2026-01-01T00:00:00Z", Some(0)),
                None,
                30,
                Grace::NotGraceful,
            ),
            (
                deleting("2026-01-01T00:00:00Z", None),
                Some(10),
                10,
                Grace::NotGraceful,
            ),
        ];
        for (obj, requested, period, decision) in table {
            assert_eq!(
                before_delete(&obj, requested, period, now),
                decision,
                "{obj} {requested:?}"
            );
        }
    }

    #[test]
    fn deletion_marks_bump_the_generation_once() {
        let mut obj = json!({"metadata": {"name": "p", "generation": 3}});
        let due: jiff::Timestamp = "2026-01-01T00:00:30Z".parse().unwrap_or_default();
        mark_graceful_deletion(&mut obj, due, 30);
        assert_eq!(obj["metadata"]["generation"], 4);
        assert_eq!(obj["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
        assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 30);
        // Shortened later: the generation stays.
        mark_graceful_deletion(&mut obj, due, 10);
        assert_eq!(obj["metadata"]["generation"], 4);
        assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 10);
        // Finalizers keep an object deleted at once: grace period 0, a due date not later
        // than now.
        let mut kept = json!({"metadata": {"name": "c", "generation": 1}});
        mark_deletion_started(&mut kept);
        assert_eq!(kept["metadata"]["generation"], 2);
        assert_eq!(kept["metadata"]["deletionGracePeriodSeconds"], 0);
        mark_deletion_started(&mut obj);
        assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 0);
        let marked = obj["metadata"]["deletionTimestamp"].as_str().unwrap_or("");
        assert!(marked <= meta::now_rfc3339().as_str(), "{marked}");
    }

    #[test]
    fn updates_remove_deleted_objects_only_once_their_grace_is_over() {
        let strategy = crate::kinds::strategy::Plain;
        let deleted = |grace: i64, finalizers: &[&str]| {
            json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z",
                "deletionGracePeriodSeconds": grace, "finalizers": finalizers}})
        };
        assert!(removed_by_update(&strategy, &deleted(0, &[])));
        assert!(!removed_by_update(&strategy, &deleted(0, &["x/y"])));
        assert!(!removed_by_update(&strategy, &deleted(30, &[])));
        assert!(!removed_by_update(
            &strategy,
            &json!({"metadata": {"name": "p"}})
        ));
    }

    #[test]
    fn generated_suffixes_use_the_upstream_alphabet() {
        let s = generate_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
