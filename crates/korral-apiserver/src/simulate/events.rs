//! Events the simulated components record about the objects they act on, as upstream's
//! recorders write them, so that `kubectl describe` and `kubectl get events` show what a
//! cluster would show (`ScalingReplicaSet`, `SuccessfulCreate`, `Scheduled`, `Started`, ...).
//!
//! The controllers and the kubelet record through client-go's legacy recorder: a core/v1
//! Event named `<object>.<hex nanoseconds>` in the object's namespace (`default` for
//! cluster-scoped objects), `source.component` (and `host` for the kubelet) and
//! `reportingComponent`/`reportingInstance` from it, `count` 1. Its correlator
//! ([`correlator`]) is followed: more than 10 similar events (same source, object, type and
//! reason) with different messages within 10 minutes are combined into one Event,
//! `(combined from similar events): <message>`; an event identical to one recorded before
//! increments that Event's `count` and `lastTimestamp` instead of writing a new one; each
//! source may record at most 25 events about one object at once, then one every 5 minutes.
//!
//! The scheduler records through the events.k8s.io/v1 recorder (`reportingController`,
//! `action`, `note`, `eventTime`, no spam filter): an isomorphic event within 6 minutes makes
//! the first one a series (`series: {count, lastObservedTime}`) instead of a new Event
//! ([`series`]).
//!
//! Recording is best effort, as upstream's: a failed write is logged and never fails the
//! reconcile that recorded it.

mod correlator;
mod series;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use jiff::Timestamp;
use serde_json::{Value, json};

use self::correlator::{Correlated, Correlator, Observed, Recorded, Similar};
use self::series::{SeriesCache, Write, micro_time};
use super::access::{self, Actor};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;

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

/// What the recorders remember: the legacy correlator and the events.k8s.io series.
#[derive(Debug, Default)]
struct Memory {
    correlator: Correlator,
    series: SeriesCache,
}

/// The clock the recorders read: the system's, unless a test set one.
#[derive(Debug, Clone, Default)]
struct Clock(Arc<Mutex<Option<Timestamp>>>);

impl Clock {
    /// Now, as the clock reads it.
    fn now(&self) -> Timestamp {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or_else(Timestamp::now)
    }
}

#[cfg(test)]
impl Recorder {
    /// Sets the time the recorders read.
    fn set_now(&self, t: Timestamp) {
        *self.clock.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(t);
    }
}

/// The recorders of one server's simulated components, with what their correlators
/// remember (shared by clones: one per simulation, see [`super::Cluster`]).
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    memory: Arc<Mutex<Memory>>,
    clock: Clock,
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
        let now = self.clock.now();
        self.write_due_series(objects, now).await;
        if actor == Actor::Scheduler {
            self.record_new_api(objects, actor, involved, note, now)
                .await;
            return;
        }
        let Note {
            field_path,
            kind,
            reason,
            message,
        } = note;
        let component = component(actor);
        let observed = Observed {
            similar: Similar {
                component,
                uid: meta::uid(involved).to_string(),
                kind,
                reason: reason.to_string(),
            },
            field_path: field_path.unwrap_or_default(),
            message: &message,
        };
        let Some(correlated) = self.memory().correlator.correlate(&observed, now) else {
            return;
        };
        let Correlated {
            key,
            message,
            combined,
            seen,
        } = correlated;
        if let Some(seen) = seen
            && self.count_again(objects, actor, &seen, &message, now).await
        {
            return;
        }
        let namespace = event_namespace(involved);
        let name = event_name(involved, now);
        let mut reference = object_reference(involved);
        if let Some(path) = field_path {
            reference["fieldPath"] = json!(path);
        }
        let at = rfc3339(now);
        let mut source = json!({"component": component});
        let host = (actor == Actor::Kubelet).then_some(super::pods::NODE_NAME);
        if let Some(host) = host {
            source["host"] = json!(host);
        }
        // Upstream's combined event is made anew from the event's source, object, type and
        // reason: it carries no reporting controller or instance.
        let (reporting_component, reporting_instance) = if combined {
            ("", "")
        } else {
            (component, host.unwrap_or(""))
        };
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
            "reportingComponent": reporting_component,
            "reportingInstance": reporting_instance,
        });
        let Ok(info) = access::info(objects, "", "v1", "events") else {
            return;
        };
        match access::create(objects, actor, &info, Some(&namespace), event).await {
            Ok(_) => self
                .memory()
                .correlator
                .remember(key, Recorded { namespace, name }),
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

    /// An events.k8s.io/v1 Event, as the scheduler's recorder writes them: a new Event, or
    /// the series of an isomorphic one written before.
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
        let namespace = event_namespace(involved);
        let event = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": event_name(involved, now), "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": component,
            "reportingInstance": format!("{component}-{}", super::pods::NODE_NAME),
            // The scheduler's actions: binding a Pod, or trying to find it a node.
            "action": if reason == "Scheduled" { "Binding" } else { "Scheduling" },
            "reason": reason,
            "regarding": object_reference(involved),
            "note": note,
            "type": kind.as_str(),
        });
        let write = self.memory().series.observe(event, now);
        match write {
            Write::Create(event) => create_new_api(objects, actor, event).await,
            Write::Series(event) => write_series(objects, actor, event).await,
            Write::Counted => {}
        }
    }

    /// Writes the series that are due: finished ones and those due for their heartbeat.
    async fn write_due_series(&self, objects: &Objects, now: Timestamp) {
        let due = self.memory().series.due(now);
        for event in due {
            write_series(objects, Actor::Scheduler, event).await;
        }
    }

    /// Counts a repeat on the Event recorded before (with the repeat's message, as
    /// upstream's patch carries it); `false` when it is gone (a new one is then recorded).
    async fn count_again(
        &self,
        objects: &Objects,
        actor: Actor,
        seen: &Recorded,
        message: &str,
        now: Timestamp,
    ) -> bool {
        let Some(stored) = access::get(objects, "", "events", &seen.namespace, &seen.name) else {
            return false;
        };
        let Ok(info) = access::info(objects, "", "v1", "events") else {
            return false;
        };
        let at = rfc3339(now);
        let message = message.to_string();
        let written = access::update(objects, actor, &info, &stored, move |event| {
            let count = event["count"].as_i64().unwrap_or(1);
            event["count"] = json!(count + 1);
            event["lastTimestamp"] = json!(at);
            event["message"] = json!(message);
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

    /// What the recorders remember (a panic elsewhere leaves it usable).
    fn memory(&self) -> MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Creates an events.k8s.io/v1 Event.
async fn create_new_api(objects: &Objects, actor: Actor, event: Value) {
    let Ok(info) = access::info(objects, "events.k8s.io", "v1", "events") else {
        return;
    };
    let namespace = meta::namespace(&event).unwrap_or("default").to_string();
    if let Err(e) = access::create(objects, actor, &info, Some(&namespace), event).await {
        tracing::debug!(error = %e, "recording an event failed");
    }
}

/// Writes the series of `event` onto the Event written for it (upstream's patch of
/// `series`), or creates it with its series when it is gone.
async fn write_series(objects: &Objects, actor: Actor, event: Value) {
    let namespace = meta::namespace(&event).unwrap_or("default");
    let Some(stored) = access::get(objects, "", "events", namespace, meta::name(&event)) else {
        return create_new_api(objects, actor, event).await;
    };
    let Ok(info) = access::info(objects, "", "v1", "events") else {
        return;
    };
    let series = event["series"].clone();
    let written = access::update(objects, actor, &info, &stored, move |stored| {
        stored["series"] = series.clone();
    })
    .await;
    if let Err(e) = written {
        tracing::debug!(error = %e, "writing an event series failed");
    }
}

/// The namespace of the events about `involved` (`default` for cluster-scoped objects).
fn event_namespace(involved: &Value) -> String {
    meta::namespace(involved)
        .filter(|ns| !ns.is_empty())
        .unwrap_or("default")
        .to_string()
}

/// The name of an event about `involved` recorded at `at` (`<object>.<hex nanoseconds>`).
fn event_name(involved: &Value, at: Timestamp) -> String {
    format!("{}.{:x}", meta::name(involved), at.as_nanosecond())
}

/// A time as the API writes it, to the second.
fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// An object layer over an in-memory store holding the `default` namespace, for the
/// simulation's unit tests.
#[cfg(test)]
pub(crate) async fn memory_store() -> Objects {
    let objects = Objects::new(
        Arc::new(crate::storage::MemoryStorage::new()),
        Arc::new(crate::registry::Registry::with_builtins()),
    );
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": "default", "uid": "ns"}});
    let key = crate::storage::object_key("", "namespaces", None, "default");
    let put = objects
        .storage()
        .update(
            key,
            Box::new(move |_| Ok(crate::storage::Write::Put(namespace))),
        )
        .await;
    assert!(put.is_ok(), "namespace");
    objects
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
    use jiff::SignedDuration;

    /// A recorder whose clock reads `t` until set again.
    fn recorder_at(t: Timestamp) -> Recorder {
        let recorder = Recorder::default();
        recorder.set_now(t);
        recorder
    }

    fn pod(resource_version: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "namespace": "default", "uid": "u",
                            "resourceVersion": resource_version}})
    }

    /// The stored Events (core shape), oldest first.
    fn stored(objects: &Objects) -> Vec<Value> {
        let mut events = access::list(objects, "", "events", "default");
        events.sort_by_key(|e| e["metadata"]["name"].as_str().map(str::to_string));
        events.into_iter().map(|e| (*e).clone()).collect()
    }

    fn start() -> Timestamp {
        "2026-11-30T09:00:00Z".parse().expect("time")
    }

    #[tokio::test]
    async fn similar_events_beyond_ten_messages_are_combined_into_one_counted_event() {
        let objects = memory_store().await;
        let recorder = recorder_at(start());
        for i in 1..=12 {
            recorder.set_now(start() + SignedDuration::from_secs(i));
            let path = container_path(false, &format!("c{i}"));
            let note = Note::normal("Created", format!("Created container: c{i}")).at(&path);
            recorder
                .record(&objects, Actor::Kubelet, &pod("1"), note)
                .await;
        }
        let events = stored(&objects);
        assert_eq!(events.len(), 10, "{events:#?}");
        for (i, event) in events.iter().take(9).enumerate() {
            assert_eq!(event["message"], format!("Created container: c{}", i + 1));
            assert_eq!(event["count"], 1);
            assert_eq!(event["reportingComponent"], "kubelet");
        }
        let combined = &events[9];
        assert_eq!(
            combined["message"],
            "(combined from similar events): Created container: c12"
        );
        assert_eq!(combined["count"], 3);
        assert_eq!(combined["firstTimestamp"], "2026-11-30T09:00:10Z");
        assert_eq!(combined["lastTimestamp"], "2026-11-30T09:00:12Z");
        assert_eq!(combined["reason"], "Created");
        assert_eq!(
            combined["involvedObject"]["fieldPath"],
            "spec.containers{c10}"
        );
        assert_eq!(
            combined["source"],
            json!({"component": "kubelet", "host": "korral-node"})
        );
        assert_eq!(combined["reportingComponent"], "");
        assert_eq!(combined["reportingInstance"], "");
        assert_eq!(
            combined["metadata"]["name"],
            event_name(&pod("1"), start() + SignedDuration::from_secs(10))
        );
    }

    #[tokio::test]
    async fn the_spam_filter_drops_a_sources_events_beyond_its_burst() {
        let objects = memory_store().await;
        let recorder = recorder_at(start());
        for i in 0..30 {
            recorder.set_now(start() + SignedDuration::from_secs(i));
            let note = Note::normal("Pulled", format!("image {i}")).at("spec.containers{c}");
            recorder
                .record(&objects, Actor::Kubelet, &pod("1"), note)
                .await;
        }
        // 25 written: 9 apart, the other 16 counted on the combined one.
        let events = stored(&objects);
        assert_eq!(events.len(), 10);
        assert_eq!(events[9]["count"], 16);
        // The scheduler's events.k8s.io recorder has no spam filter.
        for i in 30..60 {
            recorder.set_now(start() + SignedDuration::from_secs(i));
            let mut regarding = pod("1");
            regarding["metadata"]["resourceVersion"] = json!(i.to_string());
            let note = Note::warning("FailedScheduling", "0/1 nodes".to_string());
            recorder
                .record(&objects, Actor::Scheduler, &regarding, note)
                .await;
        }
        assert_eq!(stored(&objects).len(), 40);
    }

    #[tokio::test]
    async fn repeated_scheduler_events_are_one_event_with_a_series() {
        let objects = memory_store().await;
        let recorder = recorder_at(start());
        let failed = || Note::warning("FailedScheduling", "0/1 nodes are available".to_string());
        for seconds in [0, 10, 20] {
            recorder.set_now(start() + SignedDuration::from_secs(seconds));
            recorder
                .record(&objects, Actor::Scheduler, &pod("1"), failed())
                .await;
        }
        let events = stored(&objects);
        assert_eq!(events.len(), 1, "{events:#?}");
        assert_eq!(
            events[0]["series"],
            json!({"count": 2, "lastObservedTime": "2026-11-30T09:00:10.000000Z"}),
            "the third is counted in memory"
        );
        assert_eq!(events[0]["eventTime"], "2026-11-30T09:00:00.000000Z");
        // Six quiet minutes later the series is finished: written once more, then forgotten.
        recorder.set_now(start() + SignedDuration::from_secs(20 + 361));
        let note = Note::normal("Started", "Started container c".to_string());
        recorder
            .record(&objects, Actor::Kubelet, &pod("1"), note)
            .await;
        let events = stored(&objects);
        let series = events
            .iter()
            .find(|e| e["reason"] == "FailedScheduling")
            .map(|e| e["series"].clone());
        assert_eq!(
            series,
            Some(json!({"count": 3, "lastObservedTime": "2026-11-30T09:00:20.000000Z"}))
        );
        recorder.set_now(start() + SignedDuration::from_secs(20 + 362));
        recorder
            .record(&objects, Actor::Scheduler, &pod("1"), failed())
            .await;
        let failed: Vec<Value> = stored(&objects)
            .into_iter()
            .filter(|e| e["reason"] == "FailedScheduling")
            .collect();
        assert_eq!(failed.len(), 2, "a new Event once the series finished");
    }

    #[tokio::test]
    async fn a_series_whose_event_is_gone_is_written_anew() {
        let objects = memory_store().await;
        let recorder = recorder_at(start());
        let failed = || Note::warning("FailedScheduling", "0/1 nodes are available".to_string());
        recorder
            .record(&objects, Actor::Scheduler, &pod("1"), failed())
            .await;
        let first = stored(&objects).remove(0);
        let info = access::info(&objects, "", "v1", "events").expect("events");
        access::delete(&objects, Actor::Scheduler, &info, &first)
            .await
            .expect("delete");
        recorder.set_now(start() + SignedDuration::from_secs(5));
        recorder
            .record(&objects, Actor::Scheduler, &pod("1"), failed())
            .await;
        let events = stored(&objects);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["metadata"]["name"], first["metadata"]["name"]);
        assert_eq!(events[0]["series"]["count"], 2);
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
