//! `POST` of a create-only subresource that acts on an object (`pods/eviction`,
//! `pods/binding`; see [`crate::kinds::actions`]).

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode, header};

use super::{Body, State, body, path};
use crate::ApiError;
use crate::kinds::actions::{self as kind_actions, Action};
use crate::registry::ResourceInfo;

/// Decodes the body as the action's kind and runs the action; 201 with a `Status`.
pub(super) async fn serve<B>(
    state: &Arc<State>,
    info: &Arc<ResourceInfo>,
    action: Action,
    rp: path::ResourcePath,
    req: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = bytes::Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if rp.namespace.is_some() != info.namespaced {
        return Err(ApiError::unknown_resource());
    }
    let Some(name) = rp.name.clone() else {
        return Err(ApiError::method_not_allowed());
    };
    run(
        state,
        info,
        action,
        rp.namespace.as_deref(),
        Some(&name),
        req,
    )
    .await
}

/// `POST` to a create-only collection standing for an action on the object its body names
/// (`bindings`: the pod `metadata.name` names; see [`kind_actions::for_collection`]).
pub(super) async fn serve_collection<B>(
    state: &Arc<State>,
    collection: &Arc<ResourceInfo>,
    (resource, action_name): (&'static str, &'static str),
    rp: path::ResourcePath,
    req: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = bytes::Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if rp.namespace.is_some() != collection.namespaced {
        return Err(ApiError::unknown_resource());
    }
    if rp.name.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let target = state
        .objects
        .registry()
        .get(&collection.group, &collection.version, resource)
        .ok_or_else(ApiError::unknown_resource)?;
    let action =
        kind_actions::find(&target, Some(action_name)).ok_or_else(ApiError::unknown_resource)?;
    run(state, &target, action, rp.namespace.as_deref(), None, req).await
}

/// Runs `action` on the object `name` (or, for a collection, the one the body names).
async fn run<B>(
    state: &Arc<State>,
    info: &Arc<ResourceInfo>,
    action: Action,
    namespace: Option<&str>,
    name: Option<&str>,
    req: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = bytes::Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if req.method() != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let dry_run = super::parse_query(req.uri())
        .iter()
        .any(|(k, v)| k == "dryRun" && v == "All");
    let (parts, req_body) = req.into_parts();
    let bytes = body::read_body(req_body).await?;
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    // The answer (a Status, or a Binding's) is a built-in message.
    let output = super::negotiate::from_headers(
        &parts.headers,
        super::negotiate::Offer {
            protobuf_objects: true,
            stream: false,
            tables: false,
        },
        None,
    )?;
    let object = body::decode_object(&bytes, content_type, action.kind)?;
    let name = match name {
        Some(name) => name.to_string(),
        None => {
            let named = crate::meta::name(&object);
            if named.is_empty() {
                return Err(ApiError::invalid(
                    "",
                    action.kind,
                    "",
                    vec![crate::error::Cause::required(
                        "metadata.name",
                        "name or generateName is required",
                    )],
                ));
            }
            named.to_string()
        }
    };
    let answer = kind_actions::serve(
        &state.objects,
        info,
        action,
        namespace,
        &name,
        object,
        dry_run,
    )
    .await?;
    Ok(output.respond(StatusCode::CREATED, &answer))
}
