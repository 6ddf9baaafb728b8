//! Requests of a connect subresource (`pods/log`, `pods/exec`, `services/proxy`; see
//! [`crate::kinds::connect`]): the verb checked against the subresource's, the kind's answer
//! written as `text/plain`, a followed log kept open until its container stops.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};

use super::{Body, State, path};
use crate::ApiError;
use crate::kinds::connect::{self as kind_connect, Connecter, Follow};
use crate::registry::ResourceInfo;
use crate::storage::Storage;

/// The verb of a connect request, as upstream's `RequestInfoFactory` names it.
fn verb(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    }
}

/// Serves one connect request on the object the path names.
pub(super) fn serve<B>(
    state: &Arc<State>,
    info: &Arc<ResourceInfo>,
    connecter: Connecter,
    rp: path::ResourcePath,
    req: Request<B>,
) -> Result<Response<Body>, ApiError> {
    if rp.namespace.is_some() != info.namespaced {
        return Err(ApiError::unknown_resource());
    }
    let Some(name) = rp.name.as_deref() else {
        return Err(ApiError::method_not_allowed());
    };
    if !connecter.verbs.contains(&verb(req.method())) {
        return Err(ApiError::method_not_allowed());
    }
    let query = super::parse_query(req.uri());
    let connected = kind_connect::serve(
        &state.objects,
        info,
        connecter,
        rp.namespace.as_deref(),
        name,
        &query,
    )?;
    let body = match connected.follow {
        None => super::body::full(connected.text),
        Some(follow) => followed(state.objects.storage().clone(), connected.text, follow),
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(body)
        .map_err(|e| ApiError::internal(format!("building the {} answer: {e}", connecter.name)))
}

/// A body that writes `text`, then stays open while `follow` says the followed object still
/// produces output (it ends when the object changes so that it does not, or the client goes).
fn followed(storage: Arc<dyn Storage>, text: String, follow: Follow) -> Body {
    let revision = storage.revision();
    let first = futures::stream::iter((!text.is_empty()).then(|| Bytes::from(text)));
    let rest = futures::stream::once(async move {
        // Watch from the revision read with the object; a feed that cannot start ends the log.
        let Ok(mut feed) = storage.watch(revision) else {
            return;
        };
        let Follow { key, open } = follow;
        for event in feed.backlog.drain(..) {
            if event.key == key && !open(storage.get(&key).as_deref()) {
                return;
            }
        }
        if !open(storage.get(&key).as_deref()) {
            return;
        }
        while let Ok(event) = feed.live.recv().await {
            if event.key == key && !open(storage.get(&key).as_deref()) {
                return;
            }
        }
    })
    .filter_map(|()| async { None::<Bytes> });
    let frames = first
        .chain(rest)
        .map(|bytes| Ok::<_, std::convert::Infallible>(http_body::Frame::data(bytes)));
    BodyExt::boxed(StreamBody::new(frames))
}
