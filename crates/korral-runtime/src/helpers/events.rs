//! An event recorder writing `events.k8s.io/v1` Events, as kube-runtime's `Recorder` and
//! controller-runtime's `EventRecorder` do: repeats of an identical event within a window are
//! folded into the first one's `series` (count and last observed time) instead of new objects.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use serde_json::json;
use tokio::sync::Mutex;

/// How long an event is remembered for deduplication by default (kube-runtime uses 6 minutes).
pub const DEFAULT_DEDUP_WINDOW: Duration = Duration::from_secs(6 * 60);

/// The event severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something happened as expected.
    Normal,
    /// Something is not working as expected.
    Warning,
}

impl EventType {
    /// The API value: `Normal` or `Warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// One event to record about an object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Event {
    /// Normal or Warning (`kubectl describe`'s `Type`).
    pub type_: EventType,
    /// Why the action was taken, in `PascalCase`, at most 128 characters (`Reason`).
    pub reason: String,
    /// A human-readable description, at most 1 kB (`Message`).
    pub note: Option<String>,
    /// What was done, in `PascalCase`, at most 128 characters.
    pub action: String,
}

impl Event {
    /// A `Normal` event.
    pub fn normal(
        reason: impl Into<String>,
        action: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        Self {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: action.into(),
        }
    }

    /// A `Warning` event.
    pub fn warning(
        reason: impl Into<String>,
        action: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        Self {
            type_: EventType::Warning,
            ..Self::normal(reason, action, note)
        }
    }
}

/// Who reports the events: `reportingController` (e.g. `korral.dev/memcached-controller`) and
/// `reportingInstance` (e.g. the pod name; the controller name if absent).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reporter {
    /// The reporting controller.
    pub controller: String,
    /// The reporting instance.
    pub instance: Option<String>,
}

/// Why recording an event failed.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// The regarding object reference has no name.
    #[error("recording event {reason:?}: the regarding object has no name")]
    RegardingWithoutName {
        /// The event's reason.
        reason: String,
    },
    /// Creating the Event failed.
    #[error("creating event {reason:?} for {regarding}: {source}")]
    CreateEvent {
        /// The event's reason.
        reason: String,
        /// `namespace/name` of the regarding object.
        regarding: String,
        /// The API error.
        source: kube::Error,
    },
    /// Patching the series of a repeated Event failed.
    #[error("updating the series of event {name}: {source}")]
    PatchEventSeries {
        /// The Event's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

/// What makes two events identical.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    event: Event,
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
}

/// A recorded event: where it is stored and its series so far.
#[derive(Debug, Clone)]
struct Recorded {
    namespace: String,
    name: String,
    count: i32,
    last_observed: Timestamp,
}

/// Records `events.k8s.io/v1` Events about objects. Cheap to clone; clones share the
/// deduplication cache.
///
/// An event identical to one recorded within the window (same type, reason, action, note,
/// regarding object) increments that Event's `series.count` (2 on the first repeat) and sets
/// `series.lastObservedTime`, instead of creating a new Event.
///
/// Events go to the regarding object's namespace, `default` for cluster-scoped objects. RBAC:
/// `create` and `patch` on `events.k8s.io` `events`.
#[derive(Clone)]
pub struct EventRecorder {
    client: Client,
    reporter: Reporter,
    window: Duration,
    cache: Arc<Mutex<HashMap<EventKey, Recorded>>>,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("reporter", &self.reporter)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// A recorder reporting as `reporter`, deduplicating within [`DEFAULT_DEDUP_WINDOW`].
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            window: DEFAULT_DEDUP_WINDOW,
            cache: Arc::default(),
        }
    }

    /// The same recorder with another deduplication window.
    pub fn with_dedup_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Records `event` about `obj` (see [`EventRecorder::publish`]).
    pub async fn record<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        event: &Event,
    ) -> Result<K8sEvent, EventError> {
        self.publish(event, &obj.object_ref(&())).await
    }

    /// Records `event` about the object `regarding` and returns the Event as stored: a new
    /// one, or the earlier identical one with its series count incremented.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<K8sEvent, EventError> {
        let regarding_name =
            regarding
                .name
                .clone()
                .ok_or_else(|| EventError::RegardingWithoutName {
                    reason: event.reason.clone(),
                })?;
        let now = Timestamp::now();
        let key = EventKey {
            event: event.clone(),
            api_version: regarding.api_version.clone(),
            kind: regarding.kind.clone(),
            namespace: regarding.namespace.clone(),
            name: regarding.name.clone(),
            uid: regarding.uid.clone(),
        };
        // Held across the write so identical events published concurrently form one series.
        let mut cache = self.cache.lock().await;
        let window =
            jiff::SignedDuration::try_from(self.window).unwrap_or(jiff::SignedDuration::MAX);
        cache.retain(|_, r| {
            now.checked_sub(window)
                .is_ok_and(|cutoff| r.last_observed > cutoff)
        });

        if let Some(recorded) = cache.get_mut(&key) {
            let count = recorded.count.saturating_add(1);
            let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &recorded.namespace);
            let patch = json!({
                "series": EventSeries { count, last_observed_time: MicroTime(now) }
            });
            match api
                .patch(
                    &recorded.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                Ok(stored) => {
                    recorded.count = count;
                    recorded.last_observed = now;
                    tracing::debug!(name = %recorded.name, count, "event repeated");
                    return Ok(stored);
                }
                // Deleted (expired) meanwhile: record it afresh below.
                Err(kube::Error::Api(status)) if status.is_not_found() => {
                    cache.remove(&key);
                }
                Err(source) => {
                    return Err(EventError::PatchEventSeries {
                        name: recorded.name.clone(),
                        source,
                    });
                }
            }
        }

        let namespace = regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let k8s_event = K8sEvent {
            metadata: ObjectMeta {
                name: Some(format!("{regarding_name}.{:x}", now.as_nanosecond())),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(event.type_.as_str().to_owned()),
            reason: Some(event.reason.clone()),
            note: event.note.clone(),
            action: Some(event.action.clone()),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            ..K8sEvent::default()
        };
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
        let stored = api
            .create(&PostParams::default(), &k8s_event)
            .await
            .map_err(|source| EventError::CreateEvent {
                reason: event.reason.clone(),
                regarding: format!("{namespace}/{regarding_name}"),
                source,
            })?;
        let name = stored.metadata.name.clone().unwrap_or_default();
        tracing::debug!(%name, reason = %event.reason, "event recorded");
        cache.insert(
            key,
            Recorded {
                namespace,
                name,
                count: 1,
                last_observed: now,
            },
        );
        Ok(stored)
    }
}
