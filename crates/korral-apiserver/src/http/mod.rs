//! The HTTP front: authentication, routing, discovery, OpenAPI and resource verbs.

mod actions;
mod body;
mod connect;
mod discovery;
mod handlers;
mod list_body;
mod negotiate;
mod openapi;
mod path;
mod table;
mod view;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode, header};

use crate::error::ApiError;
use crate::objects::Objects;

pub use body::Body;
pub(crate) use body::{bytes_response, error_response, read_body};

/// Shared state of the HTTP front.
pub struct State {
    /// The object layer.
    pub objects: Arc<Objects>,
    /// Authentication (bearer tokens, impersonation) and authorization.
    pub auth: Arc<crate::auth::Auth>,
    /// `host:port` clients reach the server at.
    pub address: String,
    /// Flips to `true` when the server stops; ends watches.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// How often watches with bookmarks enabled get one.
    pub bookmark_interval: Duration,
    /// Fault injection (no rules unless configured).
    pub faults: crate::faults::Faults,
    /// How long a watch's client may leave its full send buffer untaken before the watch is
    /// closed (slow-consumer policy).
    pub watch_send_timeout: Duration,
}

fn parse_query(uri: &http::Uri) -> handlers::Query {
    uri.query()
        .map(|q| {
            form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn text(status: StatusCode, s: &str) -> Response<Body> {
    body::bytes_response(status, s.as_bytes().to_vec(), "text/plain; charset=utf-8")
}

/// Serves one request.
pub async fn handle<B>(state: Arc<State>, req: Request<B>) -> Response<Body>
where
    B: http_body::Body<Data = bytes::Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let method = req.method().clone();
    let uri = req.uri().clone();
    let path = uri.path().to_string();
    let accept: Vec<String> = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let armed = match state
        .faults
        .before(&method, &uri, || state.objects.storage().revision())
        .await
    {
        crate::faults::Before::Proceed(armed) => armed,
        crate::faults::Before::Respond(response) => return response,
    };
    let response = match route(&state, req).await {
        Ok(r) => armed.after(r),
        Err(err) => {
            let format = error_format(&state, &path, &accept, &err);
            body::error_response_as(&err, format)
        }
    };
    tracing::debug!(%method, %path, status = response.status().as_u16(), "request");
    response
}

async fn route<B>(state: &Arc<State>, mut req: Request<B>) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = bytes::Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let path = req.uri().path().trim_end_matches('/').to_string();
    // Health and version are public, as upstream's system:public-info-viewer allows.
    match path.as_str() {
        "/healthz" | "/livez" | "/readyz" => return Ok(text(StatusCode::OK, "ok")),
        p if p.starts_with("/healthz/")
            || p.starts_with("/livez/")
            || p.starts_with("/readyz/") =>
        {
            return Ok(text(StatusCode::OK, "ok"));
        }
        "/version" => return Ok(body::json_response(StatusCode::OK, &discovery::version())),
        _ => {}
    }
    // Authenticate, apply impersonation and authorize before anything runs.
    let query = parse_query(req.uri());
    let attrs = state.auth.request_attributes(&mut req, &query)?;
    // The group versions of aggregated APIServices belong to their extension servers.
    if let Some(apiservice) = crate::aggregator::proxy::target(&state.objects, &path) {
        return crate::aggregator::proxy::serve(
            &state.objects,
            &attrs.user,
            &apiservice,
            req,
            state.shutdown.clone(),
        )
        .await;
    }
    if let Some(response) = openapi::serve(state, &req) {
        return Ok(response);
    }
    let registry = state.objects.registry().clone();
    let is_get = req.method() == Method::GET;
    match path.as_str() {
        "/metrics" if is_get => return Ok(state.faults.metrics_response()),
        "" => {
            return Ok(body::json_response(
                StatusCode::OK,
                &serde_json::json!({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2", "/openapi/v3", "/readyz", "/version"]}),
            ));
        }
        _ => {}
    }
    let target = path::parse(&path).ok_or_else(ApiError::unknown_resource)?;
    let discovery_only = |r: Response<Body>| -> Result<Response<Body>, ApiError> {
        if is_get {
            Ok(r)
        } else {
            Err(ApiError::method_not_allowed())
        }
    };
    // Aggregated discovery when the client asks for it (kubectl does; it accepts both forms).
    let aggregated = matches!(target, path::Target::CoreVersions | path::Target::Groups)
        .then(|| {
            let accept: Vec<&str> = req
                .headers()
                .get_all(header::ACCEPT)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            discovery::aggregated_version(&accept.join(","))
        })
        .flatten();
    if let Some(version) = aggregated {
        let core = matches!(target, path::Target::CoreVersions);
        let mut doc = discovery::aggregated(&registry, core, version);
        if !core {
            crate::aggregator::discovery::merge_aggregated(&state.objects, &mut doc);
        }
        let bytes = serde_json::to_vec(&doc)
            .map_err(|e| ApiError::internal(format!("encoding discovery: {e}")))?;
        let mut response = body::bytes_response(
            StatusCode::OK,
            bytes,
            &discovery::aggregated_content_type(version),
        );
        response
            .headers_mut()
            .insert(header::VARY, http::HeaderValue::from_static("Accept"));
        return discovery_only(response);
    }
    match target {
        path::Target::CoreVersions => discovery_only(body::json_response(
            StatusCode::OK,
            &discovery::core_versions(&state.address),
        )),
        path::Target::Groups => {
            let mut doc = discovery::groups(&registry);
            crate::aggregator::discovery::merge_groups(&state.objects, &mut doc);
            discovery_only(body::json_response(StatusCode::OK, &doc))
        }
        path::Target::Group(g) => {
            let doc = crate::aggregator::discovery::group(&state.objects, &g)
                .or_else(|| discovery::group(&registry, &g))
                .ok_or_else(ApiError::unknown_resource)?;
            discovery_only(body::json_response(StatusCode::OK, &doc))
        }
        path::Target::GroupVersion(g, v) => {
            let doc = discovery::resource_list(&registry, &g, &v)
                .ok_or_else(ApiError::unknown_resource)?;
            discovery_only(body::json_response(StatusCode::OK, &doc))
        }
        path::Target::Resource(rp) => {
            if let Some(review) =
                crate::auth::reviews::Review::of(&rp.group, &rp.resource, rp.subresource.as_deref())
            {
                return serve_review(state, &attrs.user, review, rp, req).await;
            }
            if let Some(info) = state
                .objects
                .registry()
                .get(&rp.group, &rp.version, &rp.resource)
                && let Some(action) = crate::kinds::actions::find(&info, rp.subresource.as_deref())
            {
                return actions::serve(state, &info, action, rp, req).await;
            }
            if let Some(info) = state
                .objects
                .registry()
                .get(&rp.group, &rp.version, &rp.resource)
                && let Some(acting) = crate::kinds::actions::for_collection(&info)
            {
                return actions::serve_collection(state, &info, acting, rp, req).await;
            }
            if let Some(info) = state
                .objects
                .registry()
                .get(&rp.group, &rp.version, &rp.resource)
                && let Some(connecter) =
                    crate::kinds::connect::find(&info, rp.subresource.as_deref())
            {
                return connect::serve(state, &info, connecter, rp, req);
            }
            let (parts, req_body) = req.into_parts();
            let query = parse_query(&parts.uri);
            let bytes = body::read_body(req_body).await?;
            // RBAC escalation prevention runs on the object the write would store, inside the
            // guarded update, so a concurrent change of the object or of roles cannot slip by.
            let admission = crate::auth::escalation::applies(&state.auth, &attrs).then(|| {
                let auth = state.auth.clone();
                let attrs = attrs.clone();
                crate::objects::AdmissionCheck::new(move |candidate| {
                    crate::auth::escalation::check(&auth, &attrs, candidate)
                })
            });
            handlers::serve(
                state,
                rp,
                &parts.method,
                &query,
                &parts.headers,
                bytes,
                admission,
                &attrs.user,
            )
            .await
        }
    }
}

/// The form an error `Status` is written in, as upstream's `ErrorNegotiated` picks it: what
/// the client prefers (protobuf, except for custom resources, whose handler does not offer it
/// for their own responses; YAML), JSON for a failed negotiation itself (406).
fn error_format(state: &State, path: &str, accept: &[String], err: &ApiError) -> negotiate::Format {
    if err.code == 406 {
        return negotiate::Format::Json;
    }
    let custom = match path::parse(path.trim_end_matches('/')) {
        Some(path::Target::Resource(rp)) => state
            .objects
            .registry()
            .get(&rp.group, &rp.version, &rp.resource)
            .is_some_and(|info| info.is_custom() && rp.subresource.as_deref() != Some("scale")),
        _ => false,
    };
    let offer = negotiate::Offer {
        protobuf_objects: !custom,
        stream: false,
        tables: false,
    };
    match negotiate::negotiate(accept.iter().map(String::as_str), offer, None) {
        Ok(o) if o.view == view::View::Object => o.format,
        _ => negotiate::Format::Json,
    }
}

/// `POST` of an access review, SelfSubjectReview, TokenReview or TokenRequest.
async fn serve_review<B>(
    state: &Arc<State>,
    user: &crate::auth::UserInfo,
    review: crate::auth::reviews::Review,
    rp: path::ResourcePath,
    req: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = bytes::Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let registry = state.objects.registry();
    let info = registry
        .get(&rp.group, &rp.version, &rp.resource)
        .ok_or_else(ApiError::unknown_resource)?;
    if rp.namespace.is_some() != info.namespaced {
        return Err(ApiError::unknown_resource());
    }
    let is_token_request = review == crate::auth::reviews::Review::TokenRequest;
    if req.method() != Method::POST || (rp.name.is_some() != is_token_request) {
        return Err(ApiError::method_not_allowed());
    }
    let (parts, req_body) = req.into_parts();
    let bytes = body::read_body(req_body).await?;
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let output = negotiate::from_headers(
        &parts.headers,
        negotiate::Offer {
            protobuf_objects: true,
            stream: false,
            tables: false,
        },
        None,
    )?;
    let object = body::decode_object(&bytes, content_type, &info.kind)?;
    let answer = crate::auth::reviews::serve(
        &state.auth,
        user,
        review,
        rp.namespace.as_deref(),
        rp.name.as_deref(),
        object,
    )?;
    Ok(output.respond(StatusCode::CREATED, &answer))
}
