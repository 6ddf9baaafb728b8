//! ResourceQuota: what objects consume (upstream's quota evaluators), the usage of a namespace,
//! the admission check of a new object (`exceeded quota: ...`), and the status the quota
//! controller writes (`status.hard`, `status.used`).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use crate::ApiError;
use crate::meta;
use crate::quantity::{self, Quantity};
use crate::registry::Registry;
use crate::storage::{Object, Snapshot, collection_prefix};

/// Resource names counted as objects of a core collection (upstream's legacy names).
const LEGACY_COUNTS: [(&str, &str); 6] = [
    ("pods", "pods"),
    ("services", "services"),
    ("configmaps", "configmaps"),
    ("secrets", "secrets"),
    ("persistentvolumeclaims", "persistentvolumeclaims"),
    ("replicationcontrollers", "replicationcontrollers"),
];

/// The ResourceQuotas of a namespace, by name.
pub(crate) fn quotas_in(snapshot: &Snapshot, namespace: &str) -> Vec<Object> {
    let prefix = collection_prefix("", "resourcequotas", Some(namespace));
    snapshot
        .range(&prefix, None)
        .map(|(_, o)| o.clone())
        .collect()
}

/// The quantities a quota limits (`spec.hard`).
fn hard(quota: &Value) -> BTreeMap<String, Quantity> {
    quantities(meta::path(quota, "spec.hard"))
}

/// The quantities of a resource list (entries that are no quantity are left out).
fn quantities(list: Option<&Value>) -> BTreeMap<String, Quantity> {
    list.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| quantity::from_json(v).ok().map(|q| (k.clone(), q)))
        .collect()
}

/// One (a count).
fn one() -> Quantity {
    Quantity::from_count(1)
}

/// Zero.
fn zero() -> Quantity {
    Quantity::zero_value()
}

/// `a - b`, or zero when `b` is not smaller (upstream's `SubtractWithNonNegativeResult` for one
/// resource).
fn minus(a: &Quantity, b: &Quantity) -> Quantity {
    if a.cmp(b) != Ordering::Greater {
        return zero();
    }
    let negated = format!("-{}", b.canonical().trim_start_matches('+'));
    match Quantity::parse(&negated) {
        Ok(neg) => a.checked_add(&neg).unwrap_or_else(|| a.clone()),
        Err(_) => a.clone(),
    }
}

/// Adds `q` to the quantity `name` of `into`.
fn add(into: &mut BTreeMap<String, Quantity>, name: &str, q: &Quantity) {
    let sum = match into.get(name) {
        Some(cur) => cur.checked_add(q).unwrap_or_else(|| cur.clone()),
        None => q.clone(),
    };
    into.insert(name.to_string(), sum);
}

/// Whether a quota tracks `obj` (of `group`/`resource`): every object when it has no scopes;
/// otherwise only pods matching all of its `spec.scopes` and `spec.scopeSelector` terms, as
/// upstream's pod evaluator decides (`Terminating`: an `activeDeadlineSeconds`; `BestEffort`:
/// the BestEffort QoS class; `PriorityClass`: the pod's `priorityClassName`;
/// `CrossNamespacePodAffinity`: affinity terms naming other namespaces).
pub(crate) fn tracks(quota: &Value, group: &str, resource: &str, obj: &Value) -> bool {
    let mut terms: Vec<(String, String, Vec<String>)> =
        meta::strings(meta::path(quota, "spec.scopes"))
            .into_iter()
            .map(|s| (s, "Exists".to_string(), Vec::new()))
            .collect();
    for e in meta::path(quota, "spec.scopeSelector.matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        terms.push((
            text("scopeName"),
            text("operator"),
            meta::strings(e.get("values")),
        ));
    }
    if terms.is_empty() {
        return true;
    }
    if !(group.is_empty() && resource == "pods") {
        return false;
    }
    terms
        .iter()
        .all(|(scope, operator, values)| pod_matches_scope(obj, scope, operator, values))
}

/// Whether a pod matches one scope term.
fn pod_matches_scope(pod: &Value, scope: &str, operator: &str, values: &[String]) -> bool {
    let spec = pod.get("spec").and_then(Value::as_object);
    let empty = Map::new();
    let best_effort = crate::defaults::pod_qos_class(spec.unwrap_or(&empty)) == "BestEffort";
    let terminating = meta::path(pod, "spec.activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|d| d >= 0);
    let matched = match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "CrossNamespacePodAffinity" => cross_namespace_affinity(pod),
        "PriorityClass" => {
            let class = meta::path(pod, "spec.priorityClassName").and_then(Value::as_str);
            return match operator {
                "Exists" => class.is_some_and(|c| !c.is_empty()),
                "DoesNotExist" => class.is_none_or(str::is_empty),
                "In" => class.is_some_and(|c| values.iter().any(|v| v == c)),
                "NotIn" => class.is_none_or(|c| !values.iter().any(|v| v == c)),
                _ => false,
            };
        }
        _ => false,
    };
    match operator {
        "DoesNotExist" | "NotIn" => !matched,
        _ => matched,
    }
}

/// Whether a pod's (anti-)affinity terms select pods of other namespaces (`namespaces` or a
/// `namespaceSelector`).
fn cross_namespace_affinity(pod: &Value) -> bool {
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(affinity) = meta::path(pod, &format!("spec.affinity.{kind}")) else {
            return false;
        };
        let required = affinity
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let preferred = affinity
            .get("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("podAffinityTerm"));
        required.chain(preferred).any(|term| {
            term.get("namespaceSelector").is_some()
                || term
                    .get("namespaces")
                    .and_then(Value::as_array)
                    .is_some_and(|n| !n.is_empty())
        })
    })
}

/// When a pod being deleted stops being charged to quota: its `deletionTimestamp` plus its
/// `deletionGracePeriodSeconds` (`None` for a pod not being deleted, or without either).
fn pod_release_time(pod: &Value) -> Option<Timestamp> {
    let deletion: Timestamp = meta::path(pod, "metadata.deletionTimestamp")?
        .as_str()?
        .parse()
        .ok()?;
    let grace = meta::path(pod, "metadata.deletionGracePeriodSeconds")?.as_i64()?;
    deletion.checked_add(SignedDuration::from_secs(grace)).ok()
}

/// Whether a pod is charged to quota at `now` (upstream's `QuotaV1Pod`): not once it reached
/// a terminal phase (`Succeeded`, `Failed`), nor once `now` is past its deletion time plus its
/// deletion grace period (a pod stuck terminating, on a lost node say). The one rule both
/// admission and the quota status controller count pods by (through [`consumption`]).
pub(crate) fn pod_charged(pod: &Value, now: Timestamp) -> bool {
    let terminal = matches!(
        meta::path(pod, "status.phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    !terminal && pod_release_time(pod).is_none_or(|released| now <= released)
}

/// When the usage of `namespace`'s quotas changes with time alone: the earliest moment after
/// `now` at which a pod charged now passes its deletion time plus grace (see [`pod_charged`]);
/// `None` when no quota is in the namespace or no such pod.
pub(crate) fn next_usage_change(
    snapshot: &Snapshot,
    namespace: &str,
    now: Timestamp,
) -> Option<Timestamp> {
    if quotas_in(snapshot, namespace).is_empty() {
        return None;
    }
    let prefix = collection_prefix("", "pods", Some(namespace));
    snapshot
        .range(&prefix, None)
        .filter(|(_, pod)| pod_charged(pod, now))
        .filter_map(|(_, pod)| pod_release_time(pod))
        .min()
}

/// A pod's effective request or limit of `resource` (`requests`/`limits`): the larger of the
/// containers' sum and the largest init container, plus the pod overhead.
fn pod_resource(pod: &Value, kind: &str, resource: &str) -> Option<Quantity> {
    let amount = |c: &Value| {
        meta::path(c, &format!("resources.{kind}"))
            .and_then(|l| l.get(resource))
            .and_then(|v| quantity::from_json(v).ok())
    };
    let list = |field: &str| {
        meta::path(pod, &format!("spec.{field}"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    let mut any = false;
    let mut sum = zero();
    for c in list("containers") {
        if let Some(q) = amount(c) {
            any = true;
            sum = sum.checked_add(&q).unwrap_or(sum);
        }
    }
    for c in list("initContainers") {
        if let Some(q) = amount(c) {
            any = true;
            if q.cmp(&sum) == Ordering::Greater {
                sum = q;
            }
        }
    }
    if let Some(q) = meta::path(pod, "spec.overhead")
        .and_then(|o| o.get(resource))
        .and_then(|v| quantity::from_json(v).ok())
    {
        any = true;
        sum = sum.checked_add(&q).unwrap_or(sum);
    }
    any.then_some(sum)
}

/// What one object of `group`/`resource` consumes, by quota resource name.
pub(crate) fn consumption(group: &str, resource: &str, obj: &Value) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    let counted = if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    };
    out.insert(counted, one());
    // `count/pods` counts every stored pod; `pods` and compute resources only those still
    // charged (upstream's `PodUsageFunc`).
    if group.is_empty() && resource == "pods" && !pod_charged(obj, Timestamp::now()) {
        return out;
    }
    if group.is_empty()
        && let Some((name, _)) = LEGACY_COUNTS.iter().find(|(_, r)| *r == resource)
    {
        out.insert((*name).to_string(), one());
    }
    match (group, resource) {
        ("", "pods") => {
            for (kind, prefix) in [("requests", "requests."), ("limits", "limits.")] {
                let names: Vec<String> = ["containers", "initContainers"]
                    .iter()
                    .filter_map(|f| meta::path(obj, &format!("spec.{f}")))
                    .filter_map(Value::as_array)
                    .flatten()
                    .filter_map(|c| meta::path(c, &format!("resources.{kind}")))
                    .filter_map(Value::as_object)
                    .flat_map(|m| m.keys().cloned())
                    .collect();
                for name in names {
                    if let Some(q) = pod_resource(obj, kind, &name) {
                        out.insert(format!("{prefix}{name}"), q.clone());
                        if kind == "requests" && (name == "cpu" || name == "memory") {
                            out.insert(name.clone(), q);
                        }
                    }
                }
            }
        }
        ("", "services") => {
            let kind = meta::path(obj, "spec.type").and_then(Value::as_str);
            let ports = meta::path(obj, "spec.ports")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            // A load balancer that allocates no node ports counts only the ports that name one.
            let no_node_ports = kind == Some("LoadBalancer")
                && meta::path(obj, "spec.allocateLoadBalancerNodePorts")
                    == Some(&Value::Bool(false));
            let node_ports = if no_node_ports {
                ports
                    .iter()
                    .filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0)
                    .count()
            } else {
                ports.len()
            };
            if matches!(kind, Some("NodePort" | "LoadBalancer")) {
                out.insert(
                    "services.nodeports".into(),
                    Quantity::from_count(node_ports as u64),
                );
            }
            if kind == Some("LoadBalancer") {
                out.insert("services.loadbalancers".into(), one());
            }
        }
        ("", "persistentvolumeclaims") => {
            let class = super::claim_resize::claim_class(obj);
            let by_class = |name: &str| format!("{class}.storageclass.storage.k8s.io/{name}");
            if !class.is_empty() {
                out.insert(by_class("persistentvolumeclaims"), one());
            }
            if let Some(q) = claim_storage(obj) {
                if !class.is_empty() {
                    out.insert(by_class("requests.storage"), q.clone());
                }
                out.insert("requests.storage".into(), q);
            }
        }
        _ => {}
    }
    out
}

/// The storage a claim is charged: its request, or what was allocated to it when that is
/// more (upstream's `getStorageUsage`).
fn claim_storage(claim: &Value) -> Option<Quantity> {
    let requested = meta::path(claim, "spec.resources.requests.storage")
        .and_then(|v| quantity::from_json(v).ok())?;
    let allocated = meta::path(claim, "status.allocatedResources.storage")
        .and_then(|v| quantity::from_json(v).ok());
    Some(match allocated {
        Some(a) if a.cmp(&requested) == Ordering::Greater => a,
        _ => requested,
    })
}

/// The collection a quota resource name is consumed by: `(group, resource)`.
fn collection_of(name: &str) -> Option<(String, String)> {
    if let Some(counted) = name.strip_prefix("count/") {
        return Some(match counted.split_once('.') {
            Some((resource, group)) => (group.to_string(), resource.to_string()),
            None => (String::new(), counted.to_string()),
        });
    }
    if let Some((_, resource)) = LEGACY_COUNTS.iter().find(|(n, _)| *n == name) {
        return Some((String::new(), (*resource).to_string()));
    }
    let core = |r: &str| Some((String::new(), r.to_string()));
    if name == "cpu"
        || name == "memory"
        || name.starts_with("requests.") && name != "requests.storage"
        || name.starts_with("limits.")
    {
        return core("pods");
    }
    if name.starts_with("services.") {
        return core("services");
    }
    if name == "requests.storage" || name.contains(".storageclass.storage.k8s.io/") {
        return core("persistentvolumeclaims");
    }
    None
}

/// Where the objects of `group`/`resource` are stored: the storage identity of the served
/// resource (events.k8s.io Events are core's events collection), or the pair itself for a
/// resource this server does not serve.
fn stored_collection(registry: &Registry, group: &str, resource: &str) -> (String, String) {
    registry
        .versions_of(group, resource)
        .first()
        .map(|info| {
            let (g, r) = info.storage_identity();
            (g.to_string(), r.to_string())
        })
        .unwrap_or_else(|| (group.to_string(), resource.to_string()))
}

/// The usage of `names` under `quota`: every object of their collections in the quota's
/// namespace that the quota tracks (see [`tracks`]), summed. A collection is read where its
/// objects are stored, so a resource served by two groups counts the objects of both.
pub(crate) fn usage(
    registry: &Registry,
    snapshot: &Snapshot,
    quota: &Value,
    names: &[&String],
) -> BTreeMap<String, Quantity> {
    let namespace = meta::namespace(quota).unwrap_or("");
    let mut collections: Vec<(String, String)> =
        names.iter().filter_map(|n| collection_of(n)).collect();
    collections.sort();
    collections.dedup();
    let mut used: BTreeMap<String, Quantity> =
        names.iter().map(|n| ((*n).clone(), zero())).collect();
    for (group, resource) in collections {
        let (stored_group, stored_resource) = stored_collection(registry, &group, &resource);
        let prefix = collection_prefix(&stored_group, &stored_resource, Some(namespace));
        for (_, obj) in snapshot.range(&prefix, None) {
            if !tracks(quota, &group, &resource, obj) {
                continue;
            }
            for (name, q) in consumption(&group, &resource, obj) {
                if used.contains_key(&name) {
                    add(&mut used, &name, &q);
                }
            }
        }
    }
    used
}

/// Upstream's pod constraint (a backward-compatibility rule of its pod evaluator): when a quota
/// limits cpu or memory, every container and init container must state that request or limit
/// itself, unless the pod sets pod-level resources (`spec.resources`). Answers what is missing
/// as upstream words it, `limits.memory for: a,b; requests.cpu for: a` (resources and
/// container names sorted), or `None`.
fn missing_compute(pod: &Value, limits: &BTreeMap<String, Quantity>) -> Option<String> {
    const CHECKED: [&str; 6] = [
        "cpu",
        "memory",
        "requests.cpu",
        "requests.memory",
        "limits.cpu",
        "limits.memory",
    ];
    let pod_level = ["requests", "limits"].iter().any(|kind| {
        meta::path(pod, &format!("spec.resources.{kind}"))
            .and_then(Value::as_object)
            .is_some_and(|m| {
                m.keys()
                    .any(|k| k == "cpu" || k == "memory" || k.starts_with("hugepages-"))
            })
    });
    if pod_level {
        return None;
    }
    let required: Vec<&str> = limits
        .keys()
        .map(String::as_str)
        .filter(|k| CHECKED.contains(k))
        .collect();
    if required.is_empty() {
        return None;
    }
    let mut missing: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for container in ["containers", "initContainers"]
        .iter()
        .filter_map(|f| meta::path(pod, &format!("spec.{f}")))
        .filter_map(Value::as_array)
        .flatten()
    {
        let states = |kind: &str, name: &str| {
            meta::path(container, &format!("resources.{kind}"))
                .and_then(|l| l.get(name))
                .is_some()
        };
        let name = container.get("name").and_then(Value::as_str).unwrap_or("");
        for &resource in &required {
            let stated = match resource {
                "cpu" | "requests.cpu" => states("requests", "cpu"),
                "memory" | "requests.memory" => states("requests", "memory"),
                "limits.cpu" => states("limits", "cpu"),
                _ => states("limits", "memory"),
            };
            if !stated {
                missing.entry(resource).or_default().insert(name);
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    Some(
        missing
            .iter()
            .map(|(resource, names)| {
                let names: Vec<&str> = names.iter().copied().collect();
                format!("{resource} for: {}", names.join(","))
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// `a=1,b=2` as upstream prints resource lists in quota messages.
fn pretty(list: &BTreeMap<String, Quantity>) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={}", v.canonical()))
        .collect::<Vec<_>>()
        .join(",")
}

/// A write ResourceQuota admission evaluates: the object written, what it was before (`None`
/// on create) and the subresource written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Write<'a> {
    /// The API group of the resource written.
    pub group: &'a str,
    /// The resource written.
    pub resource: &'a str,
    /// The subresource an update writes (`resize`), if any.
    pub subresource: Option<&'a str>,
    /// The object as it is to be stored.
    pub obj: &'a Value,
    /// The stored object an update replaces.
    pub old: Option<&'a Value>,
}

impl Write<'_> {
    /// Whether the quota evaluators look at this write (upstream's `Evaluator.Handles`): every
    /// create of an object; updates only where usage can grow: a Service (its type or ports),
    /// a claim's main resource (its storage request), a Pod's `resize`, and a Pod whose
    /// `Terminating` scope changes (`activeDeadlineSeconds` set or cleared).
    fn handled(&self) -> bool {
        let Some(old) = self.old else {
            return self.subresource.is_none();
        };
        if !self.group.is_empty() {
            return false;
        }
        match (self.resource, self.subresource) {
            ("services", _) | ("persistentvolumeclaims", None) => true,
            ("pods", Some("resize")) => true,
            ("pods", None) => terminating(old) != terminating(self.obj),
            _ => false,
        }
    }
}

/// Whether a pod is in the `Terminating` quota scope.
fn terminating(pod: &Value) -> bool {
    pod_matches_scope(pod, "Terminating", "Exists", &[])
}

/// Checks a write against the quotas of its namespace, as upstream's `CheckRequest`: every
/// quota tracking the object must see its constraints met (`failed quota: q: must specify
/// ...`), then what the write adds to each (the whole object on create, or on update when the
/// quota did not track the old object; otherwise what grew) must fit under its hard limits. The
/// refusal is upstream's 403 (`exceeded quota: q, requested: pods=1, used: pods=1, limited:
/// pods=1`).
pub(crate) fn admit(
    registry: &Registry,
    snapshot: &Snapshot,
    write: &Write<'_>,
) -> Result<(), ApiError> {
    let Write {
        group,
        resource,
        obj,
        old,
        ..
    } = *write;
    let Some(namespace) = meta::namespace(obj).filter(|n| !n.is_empty()) else {
        return Ok(());
    };
    if !write.handled() {
        return Ok(());
    }
    let quotas = quotas_in(snapshot, namespace);
    if quotas.is_empty() {
        return Ok(());
    }
    let refuse = |why: String| ApiError::forbidden_object(group, resource, meta::name(obj), &why);
    let tracking: Vec<&Object> = quotas
        .iter()
        .filter(|q| tracks(q, group, resource, obj))
        .collect();
    if group.is_empty() && resource == "pods" && pod_charged(obj, Timestamp::now()) {
        for quota in &tracking {
            if let Some(missing) = missing_compute(obj, &hard(quota)) {
                return Err(refuse(format!(
                    "failed quota: {}: must specify {missing}",
                    meta::name(quota)
                )));
            }
        }
    }
    let consumed = consumption(group, resource, obj);
    let before = old.map(|old| consumption(group, resource, old));
    for quota in tracking {
        let limits = hard(quota);
        let delta: BTreeMap<String, Quantity> = consumed
            .iter()
            .map(|(name, q)| match (&before, old) {
                (Some(before), Some(old)) if tracks(quota, group, resource, old) => {
                    let was = before.get(name).cloned().unwrap_or_else(zero);
                    (name.clone(), minus(q, &was))
                }
                _ => (name.clone(), q.clone()),
            })
            .filter(|(name, q)| !q.is_zero() && limits.contains_key(name))
            .collect();
        if delta.is_empty() {
            continue;
        }
        let names: Vec<&String> = delta.keys().collect();
        let used = usage(registry, snapshot, quota, &names);
        let mut over_requested = BTreeMap::new();
        let mut over_used = BTreeMap::new();
        let mut over_limited = BTreeMap::new();
        for (name, want) in &delta {
            let have = used.get(name).cloned().unwrap_or_else(zero);
            let total = have.checked_add(want).unwrap_or_else(|| have.clone());
            if let Some(limit) = limits.get(name)
                && total.cmp(limit) == Ordering::Greater
            {
                over_requested.insert(name.clone(), want.clone());
                over_used.insert(name.clone(), have);
                over_limited.insert(name.clone(), limit.clone());
            }
        }
        if !over_requested.is_empty() {
            return Err(refuse(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                meta::name(quota),
                pretty(&over_requested),
                pretty(&over_used),
                pretty(&over_limited)
            )));
        }
    }
    Ok(())
}

/// The status a quota should have now: `hard` as its spec says, `used` as counted.
pub(crate) fn status(registry: &Registry, snapshot: &Snapshot, quota: &Value) -> Value {
    let limits = meta::path(quota, "spec.hard")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let names: Vec<String> = limits
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let refs: Vec<&String> = names.iter().collect();
    let used: Map<String, Value> = usage(registry, snapshot, quota, &refs)
        .into_iter()
        .map(|(k, v)| (k, json!(v.canonical())))
        .collect();
    json!({"hard": limits, "used": used})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ResourceQuota admission of a create of a core object.
    fn create(state: &Snapshot, resource: &str, obj: &Value) -> Result<(), ApiError> {
        let write = Write {
            group: "",
            resource,
            subresource: None,
            obj,
            old: None,
        };
        admit(&Registry::with_builtins(), state, &write)
    }

    /// A quantity for the tests.
    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect("quantity")
    }

    #[test]
    fn pods_consume_counts_and_effective_requests() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
        }});
        let used = consumption("", "pods", &pod);
        assert_eq!(used["pods"].canonical(), "1");
        assert_eq!(used["count/pods"].canonical(), "1");
        assert_eq!(used["requests.cpu"].canonical(), "2");
        assert_eq!(used["cpu"].canonical(), "2");
        assert_eq!(used["requests.memory"].canonical(), "64Mi");
        assert_eq!(used["limits.cpu"].canonical(), "1");
        // A finished pod counts only as a stored object (upstream's `count/pods`).
        let done = json!({"status": {"phase": "Succeeded"}});
        let used = consumption("", "pods", &done);
        assert_eq!(used.keys().collect::<Vec<_>>(), ["count/pods"]);
    }

    #[test]
    fn pods_past_their_deletion_grace_are_not_charged() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap_or_default();
        let deleting = |grace: i64| {
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:30Z",
                "deletionGracePeriodSeconds": grace}, "status": {"phase": "Running"}})
        };
        let pod = deleting(30);
        assert!(pod_charged(&pod, at("2026-01-01T00:00:59Z")));
        assert!(
            pod_charged(&pod, at("2026-01-01T00:01:00Z")),
            "not yet after"
        );
        assert!(!pod_charged(&pod, at("2026-01-01T00:01:01Z")));
        assert!(pod_charged(
            &json!({"status": {"phase": "Pending"}}),
            at("2099-01-01T00:00:00Z")
        ));
        // Without a grace period a deletion timestamp alone does not release the pod.
        let mut no_grace = deleting(30);
        no_grace["metadata"]
            .as_object_mut()
            .map(|m| m.remove("deletionGracePeriodSeconds"));
        assert!(pod_charged(&no_grace, at("2099-01-01T00:00:00Z")));
        assert!(!pod_charged(
            &json!({"status": {"phase": "Failed"}}),
            at("2000-01-01T00:00:00Z")
        ));
        // Long past: only the object count is left.
        let used = consumption("", "pods", &deleting(0));
        assert_eq!(used.keys().collect::<Vec<_>>(), ["count/pods"]);

        // The quota is looked at again when the first charged pod is released.
        let quota =
            json!({"metadata": {"name": "q", "namespace": "ns"}, "spec": {"hard": {"pods": "5"}}});
        let pod_at = |deletion: &str, grace: i64| {
            json!({"metadata": {"namespace": "ns", "deletionTimestamp": deletion,
                "deletionGracePeriodSeconds": grace}})
        };
        let state = snapshot(&[
            ("/core/resourcequotas/ns/q", quota),
            ("/core/pods/ns/a", pod_at("2026-01-01T00:00:30Z", 10)),
            ("/core/pods/ns/b", pod_at("2026-01-01T00:00:20Z", 5)),
            ("/core/pods/ns/gone", pod_at("2026-01-01T00:00:00Z", 1)),
            (
                "/core/pods/ns/live",
                json!({"metadata": {"namespace": "ns"}}),
            ),
        ]);
        assert_eq!(
            next_usage_change(&state, "ns", at("2026-01-01T00:00:10Z")),
            Some(at("2026-01-01T00:00:25Z"))
        );
        assert_eq!(
            next_usage_change(&state, "other", at("2026-01-01T00:00:10Z")),
            None
        );
    }

    fn snapshot(objects: &[(&str, Value)]) -> Snapshot {
        Snapshot {
            revision: 1,
            objects: objects
                .iter()
                .map(|(k, v)| (k.to_string(), std::sync::Arc::new(v.clone())))
                .collect(),
        }
    }

    #[test]
    fn exceeding_a_quota_is_refused_as_upstream() {
        // k8s-reference/builtin/invalid-quota-exceeded.json
        let quota = json!({"metadata": {"name": "q", "namespace": "ns"},
            "spec": {"hard": {"count/configmaps": "50", "pods": "1"}}});
        let p1 = json!({"metadata": {"name": "p1", "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}]}});
        let state = snapshot(&[
            ("/core/resourcequotas/ns/q", quota.clone()),
            ("/core/pods/ns/p1", p1),
        ]);
        let p2 = json!({"metadata": {"name": "p2", "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}]}});
        let refused = create(&state, "pods", &p2).expect_err("over quota");
        assert_eq!(refused.code, 403);
        assert_eq!(
            refused.message,
            "pods \"p2\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"
        );
        // Another namespace, or a kind the quota does not limit, passes.
        let elsewhere = json!({"metadata": {"name": "p2", "namespace": "other"}});
        assert!(create(&state, "pods", &elsewhere).is_ok());
        let cm = json!({"metadata": {"name": "cm", "namespace": "ns"}});
        assert!(create(&state, "configmaps", &cm).is_ok());
        assert_eq!(
            status(&Registry::with_builtins(), &state, &quota),
            json!({"hard": {"count/configmaps": "50", "pods": "1"},
                "used": {"count/configmaps": "0", "pods": "1"}})
        );
    }

    #[test]
    fn compute_quotas_need_requests() {
        let quota = json!({"metadata": {"name": "compute", "namespace": "ns"},
            "spec": {"hard": {"requests.cpu": "1", "limits.memory": "1Gi"}}});
        let state = snapshot(&[("/core/resourcequotas/ns/compute", quota)]);
        let bare = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(
            create(&state, "pods", &bare).expect_err("missing").message,
            "pods \"p\" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c"
        );
        // Each container must state them; the message names those that do not.
        let partial = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "initContainers": [{"name": "init"}],
                "containers": [
                    {"name": "b", "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "1Mi"}}},
                    {"name": "a", "resources": {"requests": {"cpu": "100m"}}}]}});
        assert_eq!(
            create(&state, "pods", &partial)
                .expect_err("missing")
                .message,
            "pods \"p\" is forbidden: failed quota: compute: must specify limits.memory for: a,init; requests.cpu for: init"
        );
        // Pod-level resources stand in for the containers'.
        let pod_level = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "64Mi"}},
                "containers": [{"name": "c"}]}});
        assert!(
            !create(&state, "pods", &pod_level)
                .err()
                .is_some_and(|e| e.message.contains("must specify"))
        );
        let big = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1500m"}, "limits": {"memory": "512Mi"}}}]}});
        assert_eq!(
            create(&state, "pods", &big).expect_err("over").message,
            "pods \"p\" is forbidden: exceeded quota: compute, requested: requests.cpu=1500m, used: requests.cpu=0, limited: requests.cpu=1"
        );
    }

    #[test]
    fn updates_are_evaluated_where_usage_can_grow() {
        let empty = json!({});
        let write = |resource, subresource, old| Write {
            group: "",
            resource,
            subresource,
            obj: &empty,
            old,
        };
        let old = Some(&empty);
        assert!(write("configmaps", None, None).handled());
        assert!(!write("pods", Some("binding"), None).handled());
        assert!(!write("configmaps", None, old).handled());
        assert!(write("services", None, old).handled());
        assert!(write("persistentvolumeclaims", None, old).handled());
        assert!(!write("persistentvolumeclaims", Some("status"), old).handled());
        assert!(write("pods", Some("resize"), old).handled());
        assert!(
            !write("pods", None, old).handled(),
            "the scope is unchanged"
        );
        let with_deadline = json!({"spec": {"activeDeadlineSeconds": 10}});
        let scoped = Write {
            obj: &with_deadline,
            ..write("pods", None, old)
        };
        assert!(scoped.handled(), "the pod enters the Terminating scope");
    }

    #[test]
    fn an_update_requests_only_what_grew() {
        let quota = json!({"metadata": {"name": "q", "namespace": "ns"},
            "spec": {"hard": {"requests.storage": "3Gi", "persistentvolumeclaims": "1"}}});
        let claim = |storage: &str| {
            json!({"metadata": {"name": "c", "namespace": "ns"},
                "spec": {"resources": {"requests": {"storage": storage}}}})
        };
        let old = claim("1Gi");
        let state = snapshot(&[
            ("/core/resourcequotas/ns/q", quota),
            ("/core/persistentvolumeclaims/ns/c", old.clone()),
        ]);
        let update = |new: &Value| {
            let write = Write {
                group: "",
                resource: "persistentvolumeclaims",
                subresource: None,
                obj: new,
                old: Some(&old),
            };
            admit(&Registry::with_builtins(), &state, &write)
        };
        // The claim count does not grow; 3Gi fits; 4Gi more does not.
        assert!(update(&claim("3Gi")).is_ok());
        assert_eq!(
            update(&claim("5Gi")).expect_err("over").message,
            "persistentvolumeclaims \"c\" is forbidden: exceeded quota: q, requested: requests.storage=4Gi, used: requests.storage=1Gi, limited: requests.storage=3Gi"
        );
        assert_eq!(minus(&q("1Gi"), &q("2Gi")), zero());
        assert_eq!(minus(&q("1500m"), &q("0.5")).canonical(), "1");
    }

    #[test]
    fn both_event_apis_count_the_one_collection() {
        let quota = json!({"metadata": {"name": "q", "namespace": "ns"},
            "spec": {"hard": {"count/events.events.k8s.io": "5", "count/events": "5"}}});
        let key = crate::storage::object_key("", "events", Some("ns"), "e");
        let state = snapshot(&[(
            key.as_str(),
            json!({"metadata": {"name": "e", "namespace": "ns"}}),
        )]);
        assert_eq!(
            status(&Registry::with_builtins(), &state, &quota)["used"],
            json!({"count/events.events.k8s.io": "1", "count/events": "1"})
        );
    }

    #[test]
    fn names_map_to_collections() {
        assert_eq!(
            collection_of("count/deployments.apps"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(collection_of("pods"), Some((String::new(), "pods".into())));
        assert_eq!(
            collection_of("limits.memory"),
            Some((String::new(), "pods".into()))
        );
        assert_eq!(
            collection_of("requests.storage"),
            Some((String::new(), "persistentvolumeclaims".into()))
        );
        assert_eq!(collection_of("bogus"), None);
        let mut list = BTreeMap::new();
        list.insert("pods".to_string(), q("1"));
        list.insert("requests.cpu".to_string(), q("0.5"));
        assert_eq!(pretty(&list), "pods=1,requests.cpu=500m");
    }
}
