//! Watch streams: initial state, replay from a resourceVersion, live events and bookmarks.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::SinkExt;
use futures::channel::mpsc;
use http::{Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::State;
use super::body::Body;
use super::handlers::{Query, param};
use super::negotiate::{Format, Output};
use super::table;
use super::view::{self, View};
use crate::error::ApiError;
use crate::objects::{ListOptions, matches_selectors};
use crate::registry::ResourceInfo;
use crate::storage::{EventType, Object};

/// The default watch duration when the client sets no `timeoutSeconds`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Where a watch starts.
enum Start {
    /// Send the current state as ADDED events first.
    InitialState { bookmark_end: bool },
    /// Replay events after this revision.
    After(u64),
}

/// One event of a watch stream in `format`: a JSON line, or a length-prefixed protobuf
/// `WatchEvent` (see [`crate::protobuf::encode_watch_event`]).
fn encode_as(format: Format, kind: &str, object: &Value) -> Bytes {
    if format == Format::Protobuf {
        return match crate::protobuf::encode_watch_event(kind, object) {
            Ok(frame) => Bytes::from(frame),
            Err(e) => {
                // A JSON line cannot go into a protobuf stream: the client gets an ERROR event.
                tracing::warn!(error = %e, "a watch event could not be encoded as protobuf");
                let status = ApiError::internal(format!("encoding watch event: {e}")).to_status();
                crate::protobuf::encode_watch_event("ERROR", &status)
                    .map(Bytes::from)
                    .unwrap_or_default()
            }
        };
    }
    encode(kind, object)
}

/// One JSON watch event line.
fn encode(kind: &str, object: &Value) -> Bytes {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    if serde_json::to_writer(&mut line, object).is_err() {
        line.extend_from_slice(b"null");
    }
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

/// A `BOOKMARK` event at `revision`; in a metadata-only watch its object is a
/// `PartialObjectMetadata`, as upstream transforms every event's object.
fn bookmark(
    format: Format,
    view: View,
    info: &ResourceInfo,
    revision: u64,
    initial_end: bool,
) -> Bytes {
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let object = json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": metadata});
    let object = match view {
        View::Metadata => view::partial_object(&object),
        _ => object,
    };
    encode_as(format, "BOOKMARK", &object)
}

/// Starts a watch response.
pub fn serve(
    state: &Arc<State>,
    info: Arc<ResourceInfo>,
    namespace: Option<&str>,
    opts: ListOptions,
    query: &Query,
    output: Output,
) -> Result<Response<Body>, ApiError> {
    let send_initial = match param(query, "sendInitialEvents") {
        Some("true") => true,
        Some("false") | None => false,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "invalid sendInitialEvents: {other:?}"
            )));
        }
    };
    let rv = param(query, "resourceVersion").unwrap_or("");
    let bookmarks = param(query, "allowWatchBookmarks") == Some("true");
    if send_initial {
        if param(query, "resourceVersionMatch") != Some("NotOlderThan") {
            return Err(ApiError::invalid(
                "",
                "ListOptions",
                "",
                vec![crate::error::Cause::forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )],
            ));
        }
        if !bookmarks {
            return Err(ApiError::invalid(
                "",
                "ListOptions",
                "",
                vec![crate::error::Cause::forbidden(
                    "allowWatchBookmarks",
                    "sendInitialEvents requires setting allowWatchBookmarks to true",
                )],
            ));
        }
    }
    let start = if send_initial || rv.is_empty() || rv == "0" {
        Start::InitialState {
            bookmark_end: send_initial,
        }
    } else {
        Start::After(
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion: {rv:?}")))?,
        )
    };
    let timeout = match param(query, "timeoutSeconds") {
        Some(t) => Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t:?}")))?,
        ),
        None => DEFAULT_TIMEOUT,
    };
    let prefix = crate::objects::Objects::collection(&info, namespace);
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(256);
    let mut task = WatchTask {
        state: state.clone(),
        info,
        opts,
        prefix,
        bookmarks,
        timeout,
        view: output.view,
        format: output.format,
        columns_sent: false,
    };
    // Resolve the start synchronously so errors surface before the stream begins.
    let initial = task.begin(start);
    tokio::spawn(task.run(initial, tx));
    let body: Body = StreamBody::new(rx).boxed();
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    // As upstream: protobuf streams say `;stream=watch`, JSON ones do not.
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(match output.format {
            // Negotiation never picks YAML for a stream.
            Format::Json | Format::Yaml => "application/json",
            Format::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
        }),
    );
    Ok(response)
}

struct WatchTask {
    state: Arc<State>,
    info: Arc<ResourceInfo>,
    opts: ListOptions,
    prefix: String,
    bookmarks: bool,
    timeout: Duration,
    /// How each object is sent: itself, a one-row `Table` (columns only in the first event)
    /// or its metadata only.
    view: View,
    /// JSON lines or protobuf frames.
    format: Format,
    columns_sent: bool,
}

/// What to send first and the feed to follow.
enum Begin {
    Ready {
        /// Objects of the initial state, sent as `ADDED` events. They are the stored values
        /// (shared), each encoded only when its turn to be sent comes, so a watch starting with
        /// a large collection holds no second copy of it.
        initial: Vec<Object>,
        /// Whether the initial state ends with the `k8s.io/initial-events-end` bookmark.
        initial_end: bool,
        revision: u64,
        feed: crate::storage::WatchFeed,
    },
    Expired(ApiError),
}

impl WatchTask {
    fn matches(&self, obj: &Object) -> bool {
        matches_selectors(
            &self.info,
            obj,
            self.opts.labels.as_ref(),
            self.opts.fields.as_ref(),
        )
    }

    /// Encodes one event for this watch: the object, or a one-row table. Fails when a CRD's
    /// conversion webhook cannot convert the object (the watch then ends with that error).
    async fn event(&mut self, kind: &str, obj: &Object) -> Result<Bytes, ApiError> {
        let obj = crate::conversion::to_served_one(&self.state.objects, &self.info, obj).await?;
        match self.view {
            View::Table(include) => {
                let with_columns = !self.columns_sent;
                self.columns_sent = true;
                let mut list_meta = serde_json::Map::new();
                list_meta.insert(
                    "resourceVersion".into(),
                    json!(crate::meta::resource_version(&obj)),
                );
                let t = table::table(&self.info, [&*obj], list_meta, include, with_columns);
                Ok(encode(kind, &t))
            }
            View::Metadata => Ok(encode_as(self.format, kind, &view::partial_object(&obj))),
            View::Object => Ok(encode_as(self.format, kind, &obj)),
        }
    }

    fn begin(&mut self, start: Start) -> Begin {
        let storage = self.state.objects.storage().clone();
        match start {
            Start::InitialState { bookmark_end } => {
                let snapshot = storage.snapshot();
                let initial: Vec<Object> = snapshot
                    .range(&self.prefix, None)
                    .filter(|(_, obj)| self.matches(obj))
                    .map(|(_, obj)| obj.clone())
                    .collect();
                match storage.watch(snapshot.revision) {
                    Ok(feed) => Begin::Ready {
                        initial,
                        initial_end: bookmark_end,
                        revision: snapshot.revision,
                        feed,
                    },
                    Err(e) => Begin::Expired(e),
                }
            }
            Start::After(revision) => match storage.watch(revision) {
                Ok(feed) => Begin::Ready {
                    initial: Vec::new(),
                    initial_end: false,
                    revision,
                    feed,
                },
                Err(e) => Begin::Expired(e),
            },
        }
    }

    /// The frame for one storage event, after scope and selector filtering.
    async fn frame(&mut self, event: &crate::storage::Event) -> Option<Result<Bytes, ApiError>> {
        if !event.key.starts_with(&self.prefix) {
            return None;
        }
        let now = self.matches(&event.object);
        let kind = match event.kind {
            EventType::Added => now.then_some("ADDED")?,
            EventType::Deleted => now.then_some("DELETED")?,
            EventType::Modified => {
                let before = event.previous.as_ref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => "MODIFIED",
                    (false, true) => "ADDED",
                    (true, false) => "DELETED",
                    (false, false) => return None,
                }
            }
        };
        Some(self.event(kind, &event.object).await)
    }

    /// Sends the frame of one storage event, if it concerns this watch; `false` when the watch
    /// must end (the client is gone, or the object could not be converted: an `ERROR` event
    /// was sent).
    async fn forward(
        &mut self,
        tx: &mut mpsc::Sender<Result<Frame<Bytes>, Infallible>>,
        event: &crate::storage::Event,
        slow: Duration,
    ) -> bool {
        match self.frame(event).await {
            None => true,
            Some(Ok(frame)) => send(tx, frame, slow).await,
            Some(Err(err)) => {
                fail(tx, self.format, &err).await;
                false
            }
        }
    }

    async fn run(mut self, begin: Begin, mut tx: mpsc::Sender<Result<Frame<Bytes>, Infallible>>) {
        let slow = self.state.watch_send_timeout;
        let (initial, initial_end, mut revision, mut feed) = match begin {
            Begin::Ready {
                initial,
                initial_end,
                revision,
                feed,
            } => (initial, initial_end, revision, feed),
            Begin::Expired(err) => {
                let _ = tx
                    .send(Ok(Frame::data(encode_as(
                        self.format,
                        "ERROR",
                        &err.to_status(),
                    ))))
                    .await;
                return;
            }
        };
        for obj in initial {
            let frame = match self.event("ADDED", &obj).await {
                Ok(frame) => frame,
                Err(err) => return fail(&mut tx, self.format, &err).await,
            };
            if !send(&mut tx, frame, slow).await {
                return;
            }
        }
        if initial_end
            && !send(
                &mut tx,
                bookmark(self.format, self.view, &self.info, revision, true),
                slow,
            )
            .await
        {
            return;
        }
        for event in std::mem::take(&mut feed.backlog) {
            revision = event.revision;
            if !self.forward(&mut tx, &event, slow).await {
                return;
            }
        }
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let mut shutdown = self.state.shutdown.clone();
        let interval = self.state.bookmark_interval;
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = shutdown.changed() => return,
                _ = ticker.tick(), if self.bookmarks => {
                    if !send(&mut tx, bookmark(self.format, self.view, &self.info, revision, false), slow).await {
                        return;
                    }
                }
                received = feed.live.recv() => match received {
                    Ok(event) => {
                        revision = event.revision;
                        if !self.forward(&mut tx, &event, slow).await {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return,
                },
            }
        }
    }
}

/// Ends a watch with an `ERROR` event carrying `err`'s Status.
async fn fail(
    tx: &mut mpsc::Sender<Result<Frame<Bytes>, Infallible>>,
    format: Format,
    err: &ApiError,
) {
    let _ = tx
        .send(Ok(Frame::data(encode_as(
            format,
            "ERROR",
            &err.to_status(),
        ))))
        .await;
}

/// Sends one frame to the watch's client; `false` when the watch must end: the client is gone,
/// or its buffer has stayed full for `timeout` (a slow consumer). Such a watch is closed, and
/// its client resumes from the last resourceVersion it saw; writers never wait for watchers.
async fn send(
    tx: &mut mpsc::Sender<Result<Frame<Bytes>, Infallible>>,
    frame: Bytes,
    timeout: Duration,
) -> bool {
    match tokio::time::timeout(timeout, tx.send(Ok(Frame::data(frame)))).await {
        Ok(sent) => sent.is_ok(),
        Err(_) => {
            tracing::info!(?timeout, "closing a watch whose client does not keep up");
            false
        }
    }
}
