//! Events the simulated components record about the objects they act on, as upstream's
//! recorders write them, so that `kubectl describe` and `kubectl get events` show what a
//! cluster would show (`ScalingReplicaSet`, `SuccessfulCreate`, `Scheduled`, `Started`, ...).
//!
//! The controllers and the kubelet record through client-go's legacy recorder: a core/v1
//! Event named `<object>.<hex nanoseconds>` in the object's namespace (`default` for
//! cluster-scoped objects), `source.component` (and `host` for the kubelet) and
//! `reportingComponent`/`reportingInstance` from it, `count` 1. Its correlator is followed
//! for repeats: an event identical to one recorded before (same source, object, type, reason
//! and message) increments that Event's `count` and `lastTimestamp` instead of writing a new
//! one, and each source may record at most 25 events about one object at once, then one
//! every 5 minutes (the spam filter). Not done: the aggregation of more than 10 similar
//! events with different messages into one "(combined from similar events)".
//!
//! The scheduler records through the events.k8s.io/v1 recorder (`reportingController`,
//! `action`, `note`, `eventTime`), as upstream's does.
//!
//! Recording is best effort, as upstream's: a failed write is logged and never fails the
//! reconcile that recorded it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jiff::Timestamp;
use serde_json::{Value, json};

use super::access::{self, Actor};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;

/// How many events one source may record about one object at once (upstream's burst).
const SPAM_BURST: f64 = 25.0;

/// How often, in seconds, one more event is allowed once the burst is spent (1 / 5 min).
const SPAM_REFILL_SECONDS: f64 = 300.0;

/// Bound on the remembered events (upstream's LRU of 4096 entries).
const REMEMBERED: usize = 4096;

/// An event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Normal => "Normal",
            Kind::Warning => "Warning",
        }
    }
}

/// What an event says happened.
#[derive(Debug, Clone)]
pub(crate) struct Note<'a> {
    /// The part of the object it is about (`spec.containers{web}`), if not the whole.
    pub field_path: Option<&'a str>,
    /// Its type.
    pub kind: Kind,
    /// Its reason (`SuccessfulCreate`).
    pub reason: &'a str,
    /// Its message.
    pub message: String,
}

impl<'a> Note<'a> {
    /// A `Normal` event about the whole object.
    pub(crate) fn normal(reason: &'a str, message: String) -> Self {
        Self {
            field_path: None,
            kind: Kind::Normal,
            reason,
            message,
        }
    }

    /// A `Warning` event about the whole object.
    pub(crate) fn warning(reason: &'a str, message: String) -> Self {
        Self {
            kind: Kind::Warning,
            ..Self::normal(reason, message)
        }
    }

    /// The same event about a part of the object (`spec.containers{web}`).
    pub(crate) fn at(self, field_path: &'a str) -> Self {
        Self {
            field_path: Some(field_path),
            ..self
        }
    }
}

/// What identifies a repeat of an event (upstream's `getEventKey`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    component: &'static str,
    uid: String,
    field_path: String,
    kind: Kind,
    reason: String,
    message: String,
}

/// The Event recorded for a [`Key`].
#[derive(Debug, Clone)]
struct Recorded {
    namespace: String,
    name: String,
}

/// A source's token bucket for one object (upstream's spam filter).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Timestamp,
}

/// The recorders of one server's simulated components, with what their correlators
/// remember (shared by clones: one per simulation, see [`super::Cluster`]).
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    recorded: Arc<Mutex<HashMap<Key, Recorded>>>,
    buckets: Arc<Mutex<HashMap<(&'static str, String), Bucket>>>,
}

/// The component an actor's events name as their source (upstream's `EventSource`).
fn component(actor: Actor) -> &'static str {
    match actor {
        Actor::Deployment => "deployment-controller",
        Actor::ReplicaSet => "replicaset-controller",
        Actor::ReplicationController => "replication-controller",
        Actor::StatefulSet => "statefulset-controller",
        Actor::DaemonSet => "daemonset-controller",
        Actor::Job => "job-controller",
        Actor::CronJob => "cronjob-controller",
        Actor::Scheduler => "default-scheduler",
        Actor::Kubelet => "kubelet",
        Actor::Autoscaler => "horizontal-pod-autoscaler",
        Actor::NodeLifecycle => "node-controller",
        _ => access::FIELD_MANAGER,
    }
}

impl Recorder {
    /// Records that `actor` did `note.reason` to `involved` (a stored object).
    pub(crate) async fn record(
        &self,
        objects: &Objects,
        actor: Actor,
        involved: &Value,
        note: Note<'_>,
    ) {
        let Note {
            field_path,
            kind,
            reason,
            message,
        } = note;
        let component = component(actor);
        let now = Timestamp::now();
        if !self.allow(component, meta::uid(involved), now) {
            return;
        }
        if actor == Actor::Scheduler {
            let note = Note {
                field_path,
                kind,
                reason,
                message,
            };
            self.record_new_api(objects, actor, involved, note, now)
                .await;
            return;
        }
        let key = Key {
            component,
            uid: meta::uid(involved).to_string(),
            field_path: field_path.unwrap_or_default().to_string(),
            kind,
            reason: reason.to_string(),
            message: message.clone(),
        };
        let repeat = self.remembered(&key);
        if let Some(seen) = repeat
            && self.count_again(objects, actor, &seen).await
        {
            return;
        }
        let namespace = meta::namespace(involved)
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default")
            .to_string();
        let name = format!("{}.{:x}", meta::name(involved), now.as_nanosecond());
        let mut reference = object_reference(involved);
        if let Some(path) = field_path {
            reference["fieldPath"] = json!(path);
        }
        let at = meta::now_rfc3339();
        let mut source = json!({"component": component});
        let host = (actor == Actor::Kubelet).then_some(super::pods::NODE_NAME);
        if let Some(host) = host {
            source["host"] = json!(host);
        }
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": reference,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": at,
            "lastTimestamp": at,
            "count": 1,
            "type": kind.as_str(),
            "reportingComponent": component,
            "reportingInstance": host.unwrap_or(""),
        });
        let Ok(info) = access::info(objects, "", "v1", "events") else {
            return;
        };
        match access::create(objects, actor, &info, Some(&namespace), event).await {
            Ok(_) => self.remember(key, Recorded { namespace, name }),
            Err(e) => tracing::debug!(error = %e, reason, "recording an event failed"),
        }
    }

    /// Records what upstream's pod control records for a Pod it created for `owner`:
    /// `SuccessfulCreate` "Created pod: <name>", or a `FailedCreate` warning "Error
    /// creating: <error>".
    pub(crate) async fn pod_created(
        &self,
        objects: &Objects,
        actor: Actor,
        owner: &Value,
        created: Result<&Value, &ApiError>,
    ) {
        let outcome = created.map(meta::name);
        self.pod_control(
            objects,
            actor,
            owner,
            ("Create", "creating", "Created"),
            outcome,
        )
        .await;
    }

    /// Deletes a Pod of `owner` as upstream's pod control does (background propagation,
    /// uid precondition) and records it: `SuccessfulDelete` "Deleted pod: <name>", or a
    /// `FailedDelete` warning "Error deleting: <error>".
    pub(crate) async fn delete_pod(
        &self,
        objects: &Objects,
        actor: Actor,
        pod_info: &Arc<ResourceInfo>,
        owner: &Value,
        pod: &Value,
    ) -> Result<(), ApiError> {
        let deleted = access::delete(objects, actor, pod_info, pod).await;
        let outcome = deleted.as_ref().map(|()| meta::name(pod));
        self.pod_control(
            objects,
            actor,
            owner,
            ("Delete", "deleting", "Deleted"),
            outcome,
        )
        .await;
        deleted
    }

    /// The event of one pod control action: `(verb, -ing form, past form)`.
    async fn pod_control(
        &self,
        objects: &Objects,
        actor: Actor,
        owner: &Value,
        (verb, doing, done): (&str, &str, &str),
        outcome: Result<&str, &ApiError>,
    ) {
        let (kind, reason, message) = match outcome {
            Ok(pod) => (
                Kind::Normal,
                format!("Successful{verb}"),
                format!("{done} pod: {pod}"),
            ),
            Err(e) => (
                Kind::Warning,
                format!("Failed{verb}"),
                format!("Error {doing}: {}", e.message),
            ),
        };
        let note = Note {
            field_path: None,
            kind,
            reason: &reason,
            message,
        };
        self.record(objects, actor, owner, note).await;
    }

    /// An events.k8s.io/v1 Event, as the scheduler's recorder writes them.
    async fn record_new_api(
        &self,
        objects: &Objects,
        actor: Actor,
        involved: &Value,
        Note {
            kind,
            reason,
            message: note,
            ..
        }: Note<'_>,
        now: Timestamp,
    ) {
        let component = component(actor);
        let namespace = meta::namespace(involved)
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default")
            .to_string();
        let event = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": format!("{}.{:x}", meta::name(involved), now.as_nanosecond()),
                "namespace": namespace,
            },
            "eventTime": format!(
                "{}.{:06}Z",
                now.strftime("%Y-%m-%dT%H:%M:%S"),
                now.subsec_microsecond()
            ),
            "reportingController": component,
            "reportingInstance": format!("{component}-{}", super::pods::NODE_NAME),
            // The scheduler's actions: binding a Pod, or trying to find it a node.
            "action": if reason == "Scheduled" { "Binding" } else { "Scheduling" },
            "reason": reason,
            "regarding": object_reference(involved),
            "note": note,
            "type": kind.as_str(),
        });
        let Ok(info) = access::info(objects, "events.k8s.io", "v1", "events") else {
            return;
        };
        if let Err(e) = access::create(objects, actor, &info, Some(&namespace), event).await {
            tracing::debug!(error = %e, reason, "recording an event failed");
        }
    }

    /// Counts a repeat on the Event recorded before; `false` when it is gone (a new one is
    /// then recorded).
    async fn count_again(&self, objects: &Objects, actor: Actor, seen: &Recorded) -> bool {
        let Some(stored) = access::get(objects, "", "events", &seen.namespace, &seen.name) else {
            return false;
        };
        let Ok(info) = access::info(objects, "", "v1", "events") else {
            return false;
        };
        let at = meta::now_rfc3339();
        let written = access::update(objects, actor, &info, &stored, move |event| {
            let count = event["count"].as_i64().unwrap_or(1);
            event["count"] = json!(count + 1);
            event["lastTimestamp"] = json!(at);
        })
        .await;
        match written {
            Ok(Some(_)) => true,
            Ok(None) => false,
            Err(e) => {
                tracing::debug!(error = %e, "counting a repeated event failed");
                true
            }
        }
    }

    fn remembered(&self, key: &Key) -> Option<Recorded> {
        self.recorded.lock().ok()?.get(key).cloned()
    }

    fn remember(&self, key: Key, recorded: Recorded) {
        if let Ok(mut all) = self.recorded.lock() {
            if all.len() >= REMEMBERED {
                all.clear();
            }
            all.insert(key, recorded);
        }
    }

    /// Whether `component` may record one more event about the object with `uid` now.
    fn allow(&self, component: &'static str, uid: &str, now: Timestamp) -> bool {
        let Ok(mut buckets) = self.buckets.lock() else {
            return true;
        };
        if buckets.len() >= REMEMBERED {
            buckets.clear();
        }
        let bucket = buckets
            .entry((component, uid.to_string()))
            .or_insert(Bucket {
                tokens: SPAM_BURST,
                at: now,
            });
        let elapsed = now.duration_since(bucket.at).as_secs_f64().max(0.0);
        bucket.tokens = (bucket.tokens + elapsed / SPAM_REFILL_SECONDS).min(SPAM_BURST);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            return false;
        }
        bucket.tokens -= 1.0;
        true
    }
}

/// The reference an event holds to a stored object (`ref.GetReference`).
fn object_reference(obj: &Value) -> Value {
    let mut reference = json!({
        "kind": obj.get("kind").cloned().unwrap_or(Value::Null),
        "name": meta::name(obj),
        "uid": meta::uid(obj),
        "apiVersion": obj.get("apiVersion").cloned().unwrap_or(Value::Null),
        "resourceVersion": meta::resource_version(obj),
    });
    if let Some(ns) = meta::namespace(obj).filter(|ns| !ns.is_empty()) {
        reference["namespace"] = json!(ns);
    }
    reference
}

/// The field path of a container of a Pod (`spec.containers{web}`,
/// `spec.initContainers{init}`), as the kubelet's events name it.
pub(crate) fn container_path(init: bool, name: &str) -> String {
    let list = if init { "initContainers" } else { "containers" };
    format!("spec.{list}{{{name}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spam_filter_allows_a_burst_then_one_every_five_minutes() {
        let recorder = Recorder::default();
        let start = Timestamp::UNIX_EPOCH;
        for _ in 0..25 {
            assert!(recorder.allow("kubelet", "u", start));
        }
        assert!(!recorder.allow("kubelet", "u", start));
        // Another object or another source has its own bucket.
        assert!(recorder.allow("kubelet", "v", start));
        assert!(recorder.allow("job-controller", "u", start));
        let later = start + jiff::SignedDuration::from_secs(299);
        assert!(!recorder.allow("kubelet", "u", later));
        let later = start + jiff::SignedDuration::from_secs(301);
        assert!(recorder.allow("kubelet", "u", later));
        assert!(!recorder.allow("kubelet", "u", later));
    }

    #[test]
    fn components_are_upstreams() {
        assert_eq!(component(Actor::Deployment), "deployment-controller");
        assert_eq!(component(Actor::ReplicaSet), "replicaset-controller");
        assert_eq!(component(Actor::DaemonSet), "daemonset-controller");
        assert_eq!(component(Actor::Job), "job-controller");
        assert_eq!(component(Actor::Kubelet), "kubelet");
        assert_eq!(container_path(false, "web"), "spec.containers{web}");
        assert_eq!(container_path(true, "init"), "spec.initContainers{init}");
    }
}
