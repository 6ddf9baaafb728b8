//! Admission as kube-apiserver's plugin chain runs it after the built-in plugins:
//! MutatingAdmissionPolicies, then mutating webhooks (`IfNeeded` policies and webhooks invoked
//! once more when a later one changed the object; the changed object is validated again), then
//! ValidatingAdmissionPolicies and validating webhooks. Webhooks are the Mutating- and
//! ValidatingWebhookConfigurations that match a write (rules, scope, selectors, match
//! conditions, match policy); they receive an `AdmissionReview` v1 over https. Denials,
//! failures and warnings are answered with upstream's messages.

pub(crate) mod cel;
pub(crate) mod client;
pub(crate) mod declarations;
mod matching;
mod mutation;
mod policy;
mod review;
mod typed;
pub(crate) mod url;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::objects::Objects;
use crate::registry::ResourceInfo;

/// The operation of an admission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE` (updates, patches, status writes).
    Update,
    /// `DELETE`.
    Delete,
}

impl Operation {
    /// The name in rules and reviews.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The kind of the request's `options`.
    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// Where webhook services (and the services of aggregated APIServices) are reached:
/// `namespace/name:port` mapped to a local address (a test environment's webhook or extension
/// server); other services resolve through their Endpoints (EndpointSlices for APIServices).
#[derive(Debug, Clone, Default)]
pub struct ServiceMap(Arc<RwLock<HashMap<String, SocketAddr>>>);

impl ServiceMap {
    /// Maps the service `namespace/name` on `port` to `address`.
    pub fn insert(&self, namespace: &str, name: &str, port: u16, address: SocketAddr) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(format!("{namespace}/{name}:{port}"), address);
    }

    /// Maps `namespace/name:port` to `address`.
    pub fn insert_key(&self, service: &str, address: SocketAddr) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(service.to_string(), address);
    }

    /// The address mapped for a service port, if any.
    pub(crate) fn get(&self, namespace: &str, name: &str, port: u16) -> Option<SocketAddr> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&format!("{namespace}/{name}:{port}"))
            .copied()
    }
}

/// One write as admission sees it.
pub(crate) struct Request<'a> {
    /// The object layer (webhook configurations, namespaces, services are read from it).
    pub objects: &'a Objects,
    /// The resource written, in the version of the request.
    pub info: &'a Arc<ResourceInfo>,
    /// What is done.
    pub operation: Operation,
    /// `status` for a status write.
    pub subresource: Option<&'static str>,
    /// The group, version and kind of the subresource's objects when they are not the
    /// resource's (`autoscaling`, `v1`, `Scale` for `/scale`): sent as is, in every version.
    pub subresource_kind: Option<(&'static str, &'static str, &'static str)>,
    /// Whether the name was generated from `generateName` (mutating webhooks of a create see
    /// the object before the server names it).
    pub generated_name: bool,
    /// The namespace (namespaced kinds).
    pub namespace: Option<&'a str>,
    /// The object's name.
    pub name: &'a str,
    /// The stored object (update, delete).
    pub old: Option<&'a Value>,
    /// Who asks.
    pub user: &'a UserInfo,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The request's options beyond `kind`/`apiVersion`/`dryRun` (fieldManager, propagation).
    pub options: serde_json::Map<String, Value>,
}

/// Whether any webhook configuration could apply to writes of `info` (writes skip the
/// webhook path, and keep their single guarded update, when none exists).
pub(crate) fn configured(objects: &Objects, info: &ResourceInfo) -> bool {
    !matching::exempt(info) && matching::any_configuration(objects)
}

/// What admission did to a write.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    /// The webhooks' warnings, in order.
    pub warnings: Vec<String>,
    /// Whether a mutating webhook changed the object.
    pub mutated: bool,
}

/// Runs the mutating webhooks, then `revalidate` on a changed object, then the validating
/// webhooks. `object` is the new object (`None` for a delete). An error refuses the write.
pub(crate) async fn admit(
    req: &Request<'_>,
    object: &mut Option<Value>,
    mut revalidate: impl FnMut(Value) -> Result<Value, ApiError>,
) -> Result<Admitted, ApiError> {
    let mut admitted = Admitted::default();
    if !configured(req.objects, req.info) {
        return Ok(admitted);
    }
    let namespace = policy::NamespaceObject::new();
    let (policies, failures) = mutation::plan(req, object.as_ref(), &namespace);
    let webhooks = matching::candidates(req, true, object.as_ref());
    if !policies.is_empty() || !failures.is_empty() || !webhooks.is_empty() {
        let before = object.clone();
        mutate(
            req,
            &policies,
            failures,
            &webhooks,
            object,
            &namespace,
            &mut admitted.warnings,
        )
        .await?;
        if *object != before
            && let Some(obj) = object.take()
        {
            admitted.mutated = true;
            *object = Some(revalidate(obj)?);
        }
    }
    policy::run(req, object.as_ref(), &namespace, &mut admitted.warnings).await?;
    let validating = matching::candidates(req, false, object.as_ref());
    if !validating.is_empty() {
        review::run_validating(req, &validating, object.as_ref(), &mut admitted.warnings).await?;
    }
    Ok(admitted)
}

/// The mutating stage: the policies' invocations in order, then the webhooks; then, once,
/// every `IfNeeded` policy or webhook after which another one changed the object.
async fn mutate(
    req: &Request<'_>,
    policies: &[mutation::Invocation],
    failures: Vec<mutation::Failure>,
    webhooks: &[matching::Candidate],
    object: &mut Option<Value>,
    namespace: &policy::NamespaceObject,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let mut changed_after = vec![false; policies.len() + webhooks.len()];
    let changed = |at: usize, flags: &mut Vec<bool>| {
        for flag in flags.iter_mut().take(at) {
            *flag = true;
        }
    };
    let namespace = if policies.is_empty() {
        None
    } else {
        policy::namespace_of(req, namespace)
    };
    let mut seen = Vec::new();
    let (changed_at, mut more) =
        run_policies(req, policies, object, &mut seen, namespace, None).await;
    for i in changed_at {
        changed(i, &mut changed_after);
    }
    let mut all_failures = failures;
    all_failures.append(&mut more);
    mutation::refuse(req, all_failures)?;
    for (j, hook) in webhooks.iter().enumerate() {
        if review::call_mutating(req, hook, object, warnings).await? {
            changed(policies.len() + j, &mut changed_after);
        }
    }
    let (_, failures) = run_policies(
        req,
        policies,
        object,
        &mut seen,
        namespace,
        Some(&changed_after),
    )
    .await;
    mutation::refuse(req, failures)?;
    for (j, hook) in webhooks.iter().enumerate() {
        if changed_after[policies.len() + j]
            && hook.field("reinvocationPolicy", "Never") == "IfNeeded"
        {
            review::call_mutating(req, hook, object, warnings).await?;
        }
    }
    Ok(())
}

/// Runs the mutating policies' invocations in order on `object` (only those flagged in `only`
/// that ask to be invoked again, when given), each in the version its policy matched (`seen`
/// keeps the request as seen in each version); answers the indexes of the invocations that
/// changed the object, and the failures.
async fn run_policies(
    req: &Request<'_>,
    policies: &[mutation::Invocation],
    object: &mut Option<Value>,
    seen: &mut Vec<policy::Seen>,
    namespace: Option<&Value>,
    only: Option<&[bool]>,
) -> (Vec<usize>, Vec<mutation::Failure>) {
    let mut failures = Vec::new();
    let mut changed_at = Vec::new();
    for (i, invocation) in policies.iter().enumerate() {
        if only.is_some_and(|flags| !(flags[i] && invocation.reinvoked())) {
            continue;
        }
        let Some(current) = object.as_mut() else {
            break;
        };
        let matched = invocation.matched();
        let at = match seen.iter().position(|s| s.info.version == matched.version) {
            Some(at) => at,
            None => match policy::Seen::of(req, matched, true).await {
                Ok(view) => {
                    seen.push(view);
                    seen.len() - 1
                }
                Err(why) => {
                    failures.push(invocation.failure(why));
                    continue;
                }
            },
        };
        match mutation::invoke_seen(req, invocation, current, &seen[at], namespace).await {
            Ok(true) => changed_at.push(i),
            Ok(false) => {}
            Err(failure) => failures.push(failure),
        }
    }
    (changed_at, failures)
}

/// The `CreateOptions`/`UpdateOptions` fields a review carries beyond `dryRun`.
pub(crate) fn write_options(opts: &crate::objects::WriteOptions) -> serde_json::Map<String, Value> {
    let mut options = serde_json::Map::new();
    if let Some(manager) = opts.field_manager.as_deref().filter(|m| !m.is_empty()) {
        options.insert("fieldManager".into(), Value::from(manager));
    }
    options
}

/// The `DeleteOptions` fields a review carries beyond `dryRun`.
pub(crate) fn delete_options(
    opts: &crate::objects::DeleteOptions,
) -> serde_json::Map<String, Value> {
    let mut options = serde_json::Map::new();
    if let Some(grace) = opts.grace_period_seconds {
        options.insert("gracePeriodSeconds".into(), Value::from(grace));
    }
    let mut preconditions = serde_json::Map::new();
    if let Some(uid) = &opts.precondition_uid {
        preconditions.insert("uid".into(), Value::from(uid.as_str()));
    }
    if let Some(rv) = &opts.precondition_resource_version {
        preconditions.insert("resourceVersion".into(), Value::from(rv.as_str()));
    }
    if !preconditions.is_empty() {
        options.insert("preconditions".into(), Value::Object(preconditions));
    }
    if let Some(p) = opts.propagation {
        let policy = match p {
            crate::objects::Propagation::Foreground => "Foreground",
            crate::objects::Propagation::Background => "Background",
            crate::objects::Propagation::Orphan => "Orphan",
        };
        options.insert("propagationPolicy".into(), Value::from(policy));
    }
    options
}

/// The metadata fields the server owns (uid, timestamps, generation, resource version, name
/// and namespace) as an object had them before mutating admission.
pub(crate) struct SystemMetadata(Vec<(&'static str, Option<Value>)>);

/// What [`keep_system_metadata`] restores, read from `original`.
pub(crate) fn system_metadata(original: &Value) -> SystemMetadata {
    let md = crate::meta::metadata(original);
    SystemMetadata(
        [
            "uid",
            "creationTimestamp",
            "generation",
            "resourceVersion",
            "name",
            "namespace",
        ]
        .into_iter()
        .map(|field| (field, md.and_then(|m| m.get(field)).cloned()))
        .collect(),
    )
}

/// Restores on a mutated object what the server owns, as upstream assigns it after mutating
/// admission.
pub(crate) fn keep_system_metadata(next: &mut Value, original: &SystemMetadata) {
    if let Some(md) = crate::meta::metadata_mut(next) {
        for (field, value) in &original.0 {
            match value {
                Some(v) => {
                    md.insert((*field).into(), v.clone());
                }
                None => {
                    md.remove(*field);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{keep_system_metadata, system_metadata};

    #[test]
    fn mutated_system_metadata_is_restored_and_added_fields_removed() {
        let original = json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1",
            "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"x": "1"}}});
        let system = system_metadata(&original);
        let mut next = json!({"metadata": {"name": "b", "namespace": "other", "uid": "u2",
            "generation": 7, "resourceVersion": "9", "labels": {"x": "2"}}});
        keep_system_metadata(&mut next, &system);
        assert_eq!(
            next,
            json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1",
                "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"x": "2"}}})
        );
    }
}
