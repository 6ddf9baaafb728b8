//! The built-in kinds, one module per API group (or per kind where a kind has many rules).
//!
//! Each kind is declared once, as a [`KindDef`]: how it is served (scope, short names,
//! subresources, field selectors), its upstream OpenAPI model and its [`Strategy`]. Discovery,
//! OpenAPI, tables, patching, apply and the write pipeline all read these definitions; no other
//! table of per-kind facts exists.

pub(crate) mod actions;
pub(crate) mod admissionregistration;
mod apiextensions;
pub(crate) mod apiregistration;
mod apps;
pub(crate) mod atomic;
mod autoscaling;
mod batch;
mod certificates;
pub(crate) mod connect;
mod coordination;
pub(crate) mod core;
pub(crate) mod custom;
mod discovery;
pub(crate) mod disruption;
mod events;
mod eviction;
mod flowcontrol;
pub(crate) mod lists;
pub(crate) mod networking;
mod node;
mod policy;
pub(crate) mod printer;
mod rbac;
mod resource;
mod reviews;
mod scheduling;
mod storage;
pub(crate) mod strategy;
mod workload;

use std::sync::Arc;

use schemars::JsonSchema;
use schemars::SchemaGenerator;

use crate::registry::{NameRule, ResourceInfo, ScalePaths, standard_verbs};
pub(crate) use certificates::{certificate_request_der, request_organizations};
pub(crate) use flowcontrol::ensure_configuration as ensure_flow_control_configuration;
pub(crate) use printer::Printer;
pub(crate) use resource::device_selected;
pub(crate) use scheduling::system_priority_classes;
pub(crate) use storage::is_default_class;
pub(crate) use strategy::{Context, DeletePlan, FinalizerNames, Strategy};

/// One built-in kind in one group version, as a real kube-apiserver registers it.
pub(crate) struct KindDef {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    categories: Vec<&'static str>,
    status: bool,
    scale: bool,
    generation: bool,
    name_rule: NameRule,
    fields: &'static [&'static str],
    create_only: bool,
    read_only: bool,
    delete_collection: bool,
    returns_deleted_object: bool,
    schema: Option<fn(&mut SchemaGenerator)>,
    actions: Vec<actions::Action>,
    connecters: Vec<connect::Connecter>,
    upstream_storage_version: Option<&'static str>,
    deprecation: Option<&'static str>,
    pod_spec: Option<&'static str>,
    lists: &'static [lists::ListAt],
    patch_directives: &'static [lists::DirectiveAt],
    printer: Printer,
    strategy: Arc<dyn Strategy>,
}

/// Upstream's category of the kinds that extend the API (CRDs, APIServices, admission
/// webhooks and policies): `kubectl get api-extensions`.
pub(crate) const API_EXTENSIONS: &str = "api-extensions";

fn collect<T: JsonSchema>(generator: &mut SchemaGenerator) {
    let _ = generator.subschema_for::<T>();
}

impl KindDef {
    /// A namespaced kind served at `group/version/resource`, with the given strategy.
    pub(crate) fn new(
        group: &'static str,
        version: &'static str,
        resource: &'static str,
        kind: &'static str,
        strategy: impl Strategy + 'static,
    ) -> Self {
        Self {
            group,
            version,
            resource,
            kind,
            namespaced: true,
            short: &[],
            categories: Vec::new(),
            status: false,
            scale: false,
            generation: false,
            name_rule: NameRule::Subdomain,
            fields: &[],
            create_only: false,
            read_only: false,
            delete_collection: true,
            returns_deleted_object: false,
            schema: None,
            actions: Vec::new(),
            connecters: Vec::new(),
            upstream_storage_version: None,
            deprecation: None,
            pod_spec: None,
            lists: &[],
            patch_directives: &[],
            printer: printer::DEFAULT,
            strategy: Arc::new(strategy),
        }
    }

    /// The upstream type whose OpenAPI schema the kind is served and decoded with.
    pub(crate) fn schema<T: JsonSchema>(mut self) -> Self {
        self.schema = Some(collect::<T>);
        self
    }

    /// Cluster-scoped rather than namespaced.
    pub(crate) fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    /// Short names (`deploy`).
    pub(crate) fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short = names;
        self
    }

    /// In the `all` category (`kubectl get all`).
    pub(crate) fn in_all(self) -> Self {
        self.category("all")
    }

    /// In the category `name` ([`API_EXTENSIONS`]: what extends the API).
    pub(crate) fn category(mut self, name: &'static str) -> Self {
        self.categories.push(name);
        self
    }

    /// Has a `/status` subresource.
    pub(crate) fn status(mut self) -> Self {
        self.status = true;
        self
    }

    /// Has a `/scale` subresource on `.spec.replicas` / `.status.replicas`.
    pub(crate) fn scale(mut self) -> Self {
        self.scale = true;
        self
    }

    /// `metadata.generation` tracks changes outside metadata and status.
    pub(crate) fn generation(mut self) -> Self {
        self.generation = true;
        self
    }

    /// How `metadata.name` is validated.
    pub(crate) fn names(mut self, rule: NameRule) -> Self {
        self.name_rule = rule;
        self
    }

    /// Field selectors beyond `metadata.name` and `metadata.namespace`.
    pub(crate) fn fields(mut self, fields: &'static [&'static str]) -> Self {
        self.fields = fields;
        self
    }

    /// Served for `create` only; nothing is stored (access reviews, TokenReview).
    pub(crate) fn create_only(mut self) -> Self {
        self.create_only = true;
        self
    }

    /// Served for `get` and `list` only: objects the strategy computes at each read
    /// ([`strategy::Strategy::computed`], ComponentStatus).
    pub(crate) fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// How the kind prints as a `Table` (`kubectl get`); upstream's default `Created At`
    /// column without one.
    pub(crate) fn printer(mut self, printer: Printer) -> Self {
        self.printer = printer;
        self
    }

    /// A create-only subresource acting on an object (`pods/eviction` accepting
    /// `policy/v1` `Eviction`), served by [`actions`].
    pub(crate) fn action(
        mut self,
        name: &'static str,
        group: &'static str,
        version: &'static str,
        kind: &'static str,
    ) -> Self {
        self.actions.push(actions::Action {
            name,
            group,
            version,
            kind,
        });
        self
    }

    /// A connect subresource (`pods/log`, `services/proxy`) with the kind and verbs discovery
    /// lists for it, served by [`connect`].
    pub(crate) fn connect(
        mut self,
        name: &'static str,
        kind: &'static str,
        verbs: &'static [&'static str],
    ) -> Self {
        self.connecters
            .push(connect::Connecter { name, kind, verbs });
        self
    }

    /// The version upstream stores the kind in when it is not the group's preferred one that
    /// serves it (a kind newly GA is still stored in its beta version for a release); only
    /// discovery's `storageVersionHash` tells it.
    pub(crate) fn upstream_storage_version(mut self, version: &'static str) -> Self {
        self.upstream_storage_version = Some(version);
        self
    }

    /// Upstream deprecates the resource: every request gets this `Warning` (v1 Endpoints).
    pub(crate) fn deprecated(mut self, warning: &'static str) -> Self {
        self.deprecation = Some(warning);
        self
    }

    /// Its objects hold a pod spec at this dotted path (`spec.template.spec`): pods and their
    /// controllers, which PodSecurity evaluates.
    pub(crate) fn pod_spec(mut self, path: &'static str) -> Self {
        self.pod_spec = Some(path);
        self
    }

    /// Lists only this kind has that merge by key or as sets (see [`lists`]; object metadata,
    /// the pod spec and `status.conditions` need no declaration).
    pub(crate) fn lists(mut self, lists: &'static [lists::ListAt]) -> Self {
        self.lists = lists;
        self
    }

    /// Fields of this kind patched with `retainKeys` or `replace` (see
    /// [`lists::directive`]; the pod spec's need no declaration).
    pub(crate) fn patch_directives(mut self, directives: &'static [lists::DirectiveAt]) -> Self {
        self.patch_directives = directives;
        self
    }

    /// Without the `deletecollection` verb (Namespaces).
    pub(crate) fn without_delete_collection(mut self) -> Self {
        self.delete_collection = false;
        self
    }

    /// A delete that removes an object answers with it (upstream's `ReturnDeletedObject`).
    pub(crate) fn returns_deleted_object(mut self) -> Self {
        self.returns_deleted_object = true;
        self
    }

    /// The resource info the registry serves.
    fn resource_info(&self) -> ResourceInfo {
        let mut verbs = standard_verbs();
        if self.create_only {
            verbs = vec!["create".to_string()];
        }
        if self.read_only {
            verbs = vec!["get".to_string(), "list".to_string()];
        }
        if !self.delete_collection {
            verbs.retain(|v| v != "deletecollection");
        }
        ResourceInfo {
            group: self.group.to_string(),
            version: self.version.to_string(),
            resource: self.resource.to_string(),
            singular: self.kind.to_ascii_lowercase(),
            kind: self.kind.to_string(),
            list_kind: format!("{}List", self.kind),
            namespaced: self.namespaced,
            short_names: self.short.iter().map(|x| x.to_string()).collect(),
            categories: self.categories.iter().map(|c| c.to_string()).collect(),
            verbs,
            status_subresource: self.status,
            scale: self.scale.then(|| ScalePaths {
                spec_replicas: ".spec.replicas".to_string(),
                status_replicas: ".status.replicas".to_string(),
                label_selector: Some(".status.selector".to_string()),
            }),
            name_rule: self.name_rule,
            tracks_generation: self.generation,
            returns_deleted_object: self.returns_deleted_object,
            field_selectors: self.fields.iter().map(|x| x.to_string()).collect(),
            custom: None,
            actions: self.actions.clone(),
            connecters: self.connecters.clone(),
            upstream_storage_version: self.upstream_storage_version,
            deprecation: self.deprecation,
            pod_spec: self.pod_spec,
            lists: self.lists,
            patch_directives: self.patch_directives,
            printer: self.printer,
            strategy: self.strategy.clone(),
        }
    }
}

/// Every built-in kind, in discovery order of their groups.
fn definitions() -> Vec<KindDef> {
    [
        core::kinds(),
        apiregistration::kinds(),
        apps::kinds(),
        events::kinds(),
        authentication(),
        authorization(),
        autoscaling::kinds(),
        batch::kinds(),
        certificates::kinds(),
        networking::kinds(),
        policy::kinds(),
        rbac::kinds(),
        storage::kinds(),
        admissionregistration::kinds(),
        apiextensions::kinds(),
        scheduling::kinds(),
        coordination::kinds(),
        node::kinds(),
        discovery::kinds(),
        flowcontrol::kinds(),
        resource::kinds(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn authentication() -> Vec<KindDef> {
    reviews::authentication()
}

fn authorization() -> Vec<KindDef> {
    reviews::authorization()
}

/// The resource infos of every built-in kind, each carrying its strategy.
pub(crate) fn builtin_resources() -> Vec<ResourceInfo> {
    definitions().iter().map(KindDef::resource_info).collect()
}

/// Collects the OpenAPI schemas of every built-in kind (and every model they refer to).
pub(crate) fn collect_schemas(generator: &mut SchemaGenerator) {
    for def in definitions() {
        if let Some(schema) = def.schema {
            schema(generator);
        }
    }
}
