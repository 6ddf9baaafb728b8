//! Resource verbs: get, list, create, update, patch, delete, deletecollection.

use std::sync::Arc;

use http::{HeaderMap, Method, Response, StatusCode, header};
use serde_json::{Value, json};

use super::State;
use super::body::{self, Body};
use super::list_body;
use super::negotiate::{self, Format, Offer, Output};
use super::path::ResourcePath;
use super::table;
use super::view::{self, View};
use super::watch;
use crate::conversion;
use crate::error::ApiError;
use crate::meta;
use crate::objects::{
    self, DeleteOptions, Deleted, FieldValidation, ListOptions, Part, WriteOptions,
};
use crate::patch::PatchType;
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};

/// Query parameters as pairs, in order.
pub type Query = Vec<(String, String)>;

/// First value of a query parameter.
pub fn param<'a>(query: &'a Query, name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A boolean query parameter, true for the spellings Go's `strconv.ParseBool` reads as true.
fn flag(query: &Query, name: &str) -> bool {
    matches!(
        param(query, name),
        Some("1" | "t" | "T" | "TRUE" | "true" | "True")
    )
}

/// The write options of a request, with upstream's checks of `fieldManager` (at most 128
/// bytes, printable) and `force` (apply patches only): 422 on `<kind>.meta.k8s.io`.
fn write_options(
    query: &Query,
    headers: &HeaderMap,
    options_kind: &str,
    patch_type: Option<PatchType>,
    admission: Option<&objects::AdmissionCheck>,
) -> Result<WriteOptions, ApiError> {
    let mut opts = base_write_options(query)?;
    opts.admission = admission.cloned();
    opts.user_agent = Some(
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
    );
    let force = param(query, "force");
    opts.force = matches!(force, Some("true") | Some("1"));
    let mut causes = Vec::new();
    if force.is_some() && patch_type.is_some_and(|t| t != PatchType::Apply) {
        causes.push(crate::error::Cause::forbidden(
            "force",
            "may not be specified for non-apply patch",
        ));
    }
    if let Some(manager) = &opts.field_manager {
        causes.extend(crate::apply::validate_field_manager(manager));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("meta.k8s.io", options_kind, "", causes));
    }
    Ok(opts)
}

fn base_write_options(query: &Query) -> Result<WriteOptions, ApiError> {
    let dry_run = match param(query, "dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: {other:?}: supported values: \"All\""
            )));
        }
    };
    Ok(WriteOptions {
        dry_run,
        field_manager: param(query, "fieldManager").map(str::to_string),
        field_validation: FieldValidation::parse(param(query, "fieldValidation"))?,
        ..WriteOptions::default()
    })
}

/// Refuses list/watch query parameters a client got wrong rather than ignoring them: a
/// non-boolean `watch`, a non-numeric `timeoutSeconds` or `resourceVersion`, an unknown
/// `resourceVersionMatch` (upstream's decoding and `ValidateListOptions` errors).
fn check_list_query(query: &Query) -> Result<(), ApiError> {
    if let Some(w) = param(query, "watch")
        && !matches!(
            w,
            "" | "1"
                | "t"
                | "T"
                | "TRUE"
                | "true"
                | "True"
                | "0"
                | "f"
                | "F"
                | "FALSE"
                | "false"
                | "False"
        )
    {
        return Err(ApiError::bad_request(format!("invalid watch: {w:?}")));
    }
    if let Some(t) = param(query, "timeoutSeconds").filter(|t| !t.is_empty())
        && t.parse::<i64>().is_err()
    {
        return Err(ApiError::bad_request(format!(
            "invalid timeoutSeconds: {t:?}"
        )));
    }
    if let Some(rv) = param(query, "resourceVersion").filter(|r| !r.is_empty())
        && rv.parse::<u64>().is_err()
    {
        return Err(ApiError::bad_request(format!(
            "invalid resourceVersion: {rv:?}"
        )));
    }
    match param(query, "resourceVersionMatch") {
        None | Some("" | "Exact" | "NotOlderThan") => Ok(()),
        Some(other) => Err(ApiError::invalid(
            "",
            "ListOptions",
            "",
            vec![crate::error::Cause::not_supported(
                "resourceVersionMatch",
                &json!(other),
                &[json!("Exact"), json!("NotOlderThan")],
            )],
        )),
    }
}

/// Parses list/watch selectors and checks them against the resource.
pub fn list_options(info: &ResourceInfo, query: &Query) -> Result<ListOptions, ApiError> {
    check_list_query(query)?;
    let labels = match param(query, "labelSelector") {
        Some(s) if !s.trim().is_empty() => Some(LabelSelector::parse(s)?),
        _ => None,
    };
    let fields = match param(query, "fieldSelector") {
        Some(s) if !s.trim().is_empty() => {
            let sel = FieldSelector::parse(s)?;
            objects::check_field_selector(info, &sel)?;
            Some(sel)
        }
        _ => None,
    };
    let limit = match param(query, "limit") {
        Some(l) if !l.is_empty() => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l:?}")))?
            .max(0) as usize,
        _ => 0,
    };
    Ok(ListOptions {
        labels,
        fields,
        limit,
        continue_token: param(query, "continue")
            .filter(|c| !c.is_empty())
            .map(str::to_string),
    })
}

/// Whether `Accept` names protobuf at all (the only case where the objects' protobuf support
/// matters to negotiation).
fn accepts_protobuf(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT).iter().any(|v| {
        v.as_bytes()
            .windows(8)
            .any(|w| w.eq_ignore_ascii_case(b"protobuf"))
    })
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string()
}

/// Serves a request on a resource path. `admission` runs inside the guarded update of a
/// create, update or patch of the main resource; admission webhooks run for `requester`.
/// Requests to a deprecated resource (a custom resource version, v1 Endpoints) get its
/// deprecation `Warning`.
#[allow(clippy::too_many_arguments)]
pub async fn serve(
    state: &Arc<State>,
    rp: ResourcePath,
    method: &Method,
    query: &Query,
    headers: &HeaderMap,
    body_bytes: bytes::Bytes,
    admission: Option<objects::AdmissionCheck>,
    requester: &crate::auth::UserInfo,
) -> Result<Response<Body>, ApiError> {
    let registry = state.objects.registry();
    let info = registry
        .get(&rp.group, &rp.version, &rp.resource)
        .ok_or_else(ApiError::unknown_resource)?;
    let deprecation = info.deprecation_warning();
    let mut response = serve_resource(
        state, info, rp, method, query, headers, body_bytes, admission, requester,
    )
    .await?;
    if let Some(warning) = deprecation {
        // Recorded when the request starts, so it comes before the other warnings.
        body::prepend_warning(&mut response, &warning);
    }
    Ok(response)
}

/// [`serve`] once the resource is known.
#[allow(clippy::too_many_arguments)]
async fn serve_resource(
    state: &Arc<State>,
    info: Arc<ResourceInfo>,
    rp: ResourcePath,
    method: &Method,
    query: &Query,
    headers: &HeaderMap,
    body_bytes: bytes::Bytes,
    admission: Option<objects::AdmissionCheck>,
    requester: &crate::auth::UserInfo,
) -> Result<Response<Body>, ApiError> {
    if rp.namespace.is_some() && !info.namespaced {
        return Err(ApiError::unknown_resource());
    }
    let namespace = rp.namespace.as_deref();
    let part = match rp.subresource.as_deref() {
        None => Part::Main,
        Some("status") if info.status_subresource => Part::Status,
        Some("scale") if info.scale.is_some() => {
            return serve_scale(
                state, &info, &rp, method, query, headers, body_bytes, requester,
            )
            .await;
        }
        Some(sub) => match info.strategy.subresources().iter().find(|s| **s == sub) {
            Some(name) => {
                let verb = match *method {
                    Method::GET => "get",
                    Method::PATCH => "patch",
                    Method::PUT => "update",
                    _ => "",
                };
                if !info.strategy.subresource_verbs(name).contains(&verb) {
                    return Err(ApiError::method_not_allowed());
                }
                Part::Subresource(name)
            }
            None => return Err(ApiError::unknown_resource()),
        },
    };
    // A built-in resource serves only its verbs (upstream registers no route for the others):
    // read-only ComponentStatus, create-only Binding. Custom resources keep every verb (a
    // terminating CRD's discovery lists fewer, yet updates still remove finalizers).
    if part == Part::Main && !info.is_custom() {
        let verb =
            crate::auth::attributes::request_verb(method, rp.name.is_some(), flag(query, "watch"));
        if !verb.is_empty() && !info.allows(verb) {
            return Err(ApiError::method_not_allowed());
        }
    }
    let objects = &state.objects;
    // Negotiated before anything runs, as upstream's handlers do: a 406 changes nothing.
    let output = negotiate::from_headers(
        headers,
        Offer {
            // Looked up only when protobuf is asked for (the descriptor lookup is not free).
            protobuf_objects: accepts_protobuf(headers)
                && !info.is_custom()
                && crate::protobuf::supports_kind(&info.api_version(), &info.kind),
            stream: *method == Method::GET && flag(query, "watch"),
            tables: true,
        },
        param(query, "includeObject"),
    )?;
    let view = output.view;
    match (method, rp.name.as_deref()) {
        (&Method::GET, Some(name)) => {
            if flag(query, "watch") {
                let mut q = query.clone();
                q.push(("fieldSelector".into(), format!("metadata.name={name}")));
                let opts = list_options(&info, &q)?;
                return watch::serve(state, info, namespace, opts, query, output);
            }
            let stored = objects.get(&info, namespace, name)?;
            let obj = conversion::to_served_one(objects, &info, &stored).await?;
            match view {
                View::Table(include) => {
                    let mut list_meta = serde_json::Map::new();
                    list_meta.insert(
                        "resourceVersion".into(),
                        json!(meta::resource_version(&obj)),
                    );
                    let t = table::table(&info, [&*obj], list_meta, include, true);
                    Ok(output.respond(StatusCode::OK, &t))
                }
                View::Metadata => Ok(output.respond(StatusCode::OK, &view::partial_object(&obj))),
                View::Object => Ok(output.respond(StatusCode::OK, &obj)),
            }
        }
        (&Method::GET, None) => {
            let opts = list_options(&info, query)?;
            if flag(query, "watch") {
                return watch::serve(state, info, namespace, opts, query, output);
            }
            let mut page = objects.list(&info, namespace, &opts)?;
            page.items = conversion::to_served(objects, &info, page.items).await?;
            Ok(list_view_response(info, page, output))
        }
        (&Method::POST, None) if part == Part::Main => {
            let mut opts =
                write_options(query, headers, "CreateOptions", None, admission.as_ref())?;
            opts.requester = Some(requester.clone());
            let obj = body::decode_object(&body_bytes, &content_type(headers), &info.kind)?;
            let duplicates = duplicate_fields(&info, &body_bytes, headers, opts.field_validation)?;
            let mut written = objects.create(&info, namespace, obj, &opts).await?;
            written.warnings.splice(0..0, duplicates);
            let served = conversion::to_served_one(objects, &info, &written.object).await?;
            let mut response = output.respond(StatusCode::CREATED, &served);
            body::add_warnings(&mut response, &written.warnings);
            Ok(response)
        }
        (&Method::PUT, Some(name)) => {
            let mut opts =
                write_options(query, headers, "UpdateOptions", None, admission.as_ref())?;
            opts.requester = Some(requester.clone());
            let obj = body::decode_object(&body_bytes, &content_type(headers), &info.kind)?;
            let duplicates = duplicate_fields(&info, &body_bytes, headers, opts.field_validation)?;
            let mut written = objects
                .update(&info, namespace, name, obj, part, &opts)
                .await?;
            written.warnings.splice(0..0, duplicates);
            let served = conversion::to_served_one(objects, &info, &written.object).await?;
            let mut response = output.respond(StatusCode::OK, &served);
            body::add_warnings(&mut response, &written.warnings);
            Ok(response)
        }
        (&Method::PATCH, Some(name)) => {
            let patch_type = if info.is_custom() {
                PatchType::from_content_type_for_custom_resource(&content_type(headers))?
            } else {
                PatchType::from_content_type(&content_type(headers))?
            };
            let mut opts = write_options(
                query,
                headers,
                "PatchOptions",
                Some(patch_type),
                admission.as_ref(),
            )?;
            opts.requester = Some(requester.clone());
            let duplicates = duplicate_fields(&info, &body_bytes, headers, opts.field_validation)?;
            let mut written = objects
                .patch(
                    &info,
                    namespace,
                    name,
                    objects::PatchBody {
                        kind: patch_type,
                        bytes: body_bytes.to_vec(),
                    },
                    part,
                    &opts,
                )
                .await?;
            written.warnings.splice(0..0, duplicates);
            let code = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let served = conversion::to_served_one(objects, &info, &written.object).await?;
            let mut response = output.respond(code, &served);
            body::add_warnings(&mut response, &written.warnings);
            Ok(response)
        }
        (&Method::DELETE, Some(name)) if part == Part::Main => {
            let options = delete_body(&body_bytes, headers)?;
            let mut opts = DeleteOptions::from_request(options.as_ref(), query)?;
            opts.requester = Some(requester.clone());
            let (deleted, warnings) = objects.delete_warned(&info, namespace, name, &opts).await?;
            let mut response = match deleted {
                Deleted::Pending(obj) => output.respond(
                    StatusCode::OK,
                    &*conversion::to_served_one(objects, &info, &obj).await?,
                ),
                Deleted::Gone(obj) => {
                    if info.returns_deleted_object {
                        output.respond(
                            StatusCode::OK,
                            &*conversion::to_served_one(objects, &info, &obj).await?,
                        )
                    } else {
                        output.respond(
                            StatusCode::OK,
                            &json!({
                                "kind": "Status",
                                "apiVersion": "v1",
                                "metadata": {},
                                "status": "Success",
                                "details": {
                                    "name": name,
                                    "group": info.group,
                                    "kind": info.resource,
                                    "uid": meta::uid(&obj),
                                },
                            }),
                        )
                    }
                }
            };
            body::add_warnings(&mut response, &warnings);
            Ok(response)
        }
        (&Method::DELETE, None) if part == Part::Main && info.allows("deletecollection") => {
            let options = delete_body(&body_bytes, headers)?;
            let mut opts = DeleteOptions::from_request(options.as_ref(), query)?;
            opts.requester = Some(requester.clone());
            let list = list_options(&info, query)?;
            let deleted = objects
                .delete_collection(&info, namespace, &list, &opts)
                .await?;
            let deleted = conversion::to_served(objects, &info, deleted).await?;
            let page = objects::ListPage {
                revision: objects.storage().revision(),
                items: deleted,
                continue_token: None,
                remaining: None,
            };
            let output = Output {
                view: View::Object,
                ..output
            };
            Ok(list_view_response(info, page, output))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// `GET|PUT|PATCH .../<name>/scale`; admission webhooks run for `requester`.
#[allow(clippy::too_many_arguments)]
async fn serve_scale(
    state: &Arc<State>,
    info: &Arc<ResourceInfo>,
    rp: &ResourcePath,
    method: &Method,
    query: &Query,
    headers: &HeaderMap,
    body_bytes: bytes::Bytes,
    requester: &crate::auth::UserInfo,
) -> Result<Response<Body>, ApiError> {
    let name = rp
        .name
        .as_deref()
        .ok_or_else(ApiError::method_not_allowed)?;
    let namespace = rp.namespace.as_deref();
    let objects = &state.objects;
    // autoscaling/v1 Scale is a built-in message, custom resources' scale too.
    let output = negotiate::from_headers(
        headers,
        Offer {
            protobuf_objects: true,
            stream: false,
            tables: false,
        },
        None,
    )?;
    let (scale, warnings) = match *method {
        Method::GET => (objects.get_scale(info, namespace, name).await?, Vec::new()),
        Method::PUT => {
            let mut opts = write_options(query, headers, "UpdateOptions", None, None)?;
            opts.requester = Some(requester.clone());
            let body = body::decode_object(&body_bytes, &content_type(headers), "Scale")?;
            objects
                .write_scale(info, namespace, name, &opts, move |_| Ok(body))
                .await?
        }
        Method::PATCH => {
            let patch_type = PatchType::from_content_type(&content_type(headers))?;
            let mut opts = write_options(query, headers, "PatchOptions", Some(patch_type), None)?;
            opts.requester = Some(requester.clone());
            if patch_type == PatchType::Apply {
                let scale = objects
                    .apply_scale(info, namespace, name, &body_bytes, &opts)
                    .await?;
                return Ok(output.respond(StatusCode::OK, &scale));
            }
            let bytes = body_bytes.to_vec();
            objects
                .write_scale(info, namespace, name, &opts, move |current| {
                    crate::patch::apply_patch(patch_type, current, &bytes, None)
                })
                .await?
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    let mut response = output.respond(StatusCode::OK, &scale);
    body::add_warnings(&mut response, &warnings);
    Ok(response)
}

/// Repeated fields of a JSON body (create, update, merge patches): 400 under
/// `fieldValidation=Strict`, `Warning`s under `Warn` (serde_json would keep the last silently).
fn duplicate_fields(
    info: &ResourceInfo,
    bytes: &[u8],
    headers: &HeaderMap,
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let media = content_type(headers);
    let media = media.split(';').next().unwrap_or("").trim();
    let json = matches!(
        media,
        "" | "application/json"
            | "application/merge-patch+json"
            | "application/strategic-merge-patch+json"
    );
    if validation == FieldValidation::Ignore || !json {
        return Ok(Vec::new());
    }
    let found: Vec<String> = crate::validation::duplicates::find(bytes)
        .iter()
        .map(|p| crate::validation::duplicates::message(p))
        .collect();
    if validation == FieldValidation::Strict && !found.is_empty() {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
            found.join(", "),
            kind = info.kind,
            version = info.version,
        )));
    }
    Ok(found)
}

/// The `DeleteOptions` of a DELETE body, JSON or protobuf (`kubectl drain
/// --disable-eviction` sends protobuf); `None` for an empty body.
fn delete_body(bytes: &[u8], headers: &HeaderMap) -> Result<Option<Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    if content_type(headers).starts_with(crate::protobuf::CONTENT_TYPE) {
        return crate::protobuf::decode_object(bytes)
            .map(Some)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")));
    }
    serde_json::from_slice::<Value>(bytes)
        .map(Some)
        .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))
}

/// The `ListMeta` of a page.
fn list_metadata(page: &objects::ListPage) -> serde_json::Map<String, Value> {
    let mut metadata = serde_json::Map::new();
    metadata.insert("resourceVersion".into(), json!(page.revision.to_string()));
    if let Some(token) = &page.continue_token {
        metadata.insert("continue".into(), json!(token));
    }
    if let Some(remaining) = page.remaining {
        metadata.insert("remainingItemCount".into(), json!(remaining));
    }
    metadata
}

/// A list response in `output`'s view, streamed item by item from the page's shared objects
/// (see [`list_body`]): a `<Kind>List`, a `Table` or a `PartialObjectMetadataList`; in
/// protobuf, the list message encoded whole. The items are already in `info`'s version
/// ([`conversion::to_served`]).
pub fn list_view_response(
    info: Arc<ResourceInfo>,
    page: objects::ListPage,
    output: Output,
) -> Response<Body> {
    let metadata = list_metadata(&page);
    if output.format == Format::Protobuf
        && let Some(response) = protobuf_list(&info, &page.items, &metadata, output.view)
    {
        return response;
    }
    let items = page.items.into_iter();
    match output.view {
        View::Object => {
            let envelope = list_body::Envelope::ordered(
                [
                    ("kind", json!(info.list_kind)),
                    ("apiVersion", json!(info.api_version())),
                    ("metadata", Value::Object(metadata)),
                ],
                "items",
            );
            list_body::respond_as(output.format, &envelope, items)
        }
        View::Table(include) => {
            let mut rows: Vec<_> = items.collect();
            if let Some(order) = info.strategy.table_row_order() {
                rows.sort_by(|a, b| order(a, b));
            }
            let envelope =
                list_body::Envelope::from_map(table::envelope(&info, metadata, true), "rows");
            list_body::respond_as(
                output.format,
                &envelope,
                rows.into_iter()
                    .map(move |o| table::row(&info, &o, include)),
            )
        }
        View::Metadata => {
            let envelope =
                list_body::Envelope::from_map(view::partial_list_envelope(metadata), "items");
            list_body::respond_as(
                output.format,
                &envelope,
                items.map(|o| view::partial_object(&o)),
            )
        }
    }
}

/// A protobuf list response (`<Kind>List` or `PartialObjectMetadataList`); `None` when the
/// view has no protobuf form or encoding fails (the caller answers JSON).
fn protobuf_list(
    info: &ResourceInfo,
    items: &[crate::storage::Object],
    metadata: &serde_json::Map<String, Value>,
    view: View,
) -> Option<Response<Body>> {
    let metadata = Value::Object(metadata.clone());
    let encoded = match view {
        View::Object => crate::protobuf::encode_list(
            &info.api_version(),
            &info.list_kind,
            &metadata,
            items.iter().map(|o| &**o),
        ),
        View::Metadata => {
            let partial: Vec<Value> = items.iter().map(|o| view::partial_object(o)).collect();
            crate::protobuf::encode_list(
                "meta.k8s.io/v1",
                "PartialObjectMetadataList",
                &metadata,
                partial.iter(),
            )
        }
        View::Table(_) => return None,
    };
    match encoded {
        Ok(bytes) => Some(body::bytes_response(
            StatusCode::OK,
            bytes,
            crate::protobuf::CONTENT_TYPE,
        )),
        Err(e) => {
            tracing::warn!(error = %e, list = %info.list_kind, "answering JSON: protobuf encoding failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use http_body_util::BodyExt;

    /// Pods enough for several chunks, some stored in another apiVersion spelling.
    fn pods(n: usize) -> Vec<crate::storage::Object> {
        (0..n)
            .map(|i| {
                Arc::new(json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": format!("pod-{i:05}"), "namespace": "default",
                        "resourceVersion": (i + 1).to_string(), "uid": format!("u-{i}"),
                        "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"i": i.to_string()}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "n"},
                    "status": {"phase": "Running", "podIP": "10.0.0.1"}}))
            })
            .collect()
    }

    async fn body_of(response: Response<Body>) -> Vec<u8> {
        assert_eq!(response.status(), StatusCode::OK);
        response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec()
    }

    #[test]
    fn delete_options_are_read_from_json_and_protobuf_bodies() {
        let mut headers = HeaderMap::new();
        assert_eq!(delete_body(b"  ", &headers).expect("empty"), None);
        let json = br#"{"propagationPolicy":"Orphan"}"#;
        assert_eq!(
            delete_body(json, &headers).expect("json"),
            Some(json!({"propagationPolicy": "Orphan"}))
        );
        headers.insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/vnd.kubernetes.protobuf"),
        );
        let options = delete_body(&crate::protobuf::tests::delete_options_bytes(), &headers)
            .expect("protobuf")
            .expect("options");
        assert_eq!(options["propagationPolicy"], "Foreground");
        assert_eq!(options["preconditions"]["uid"], "uid-1");
        assert_eq!(options["gracePeriodSeconds"], 0);
        let err = delete_body(b"not protobuf", &headers).expect_err("garbage");
        assert_eq!(err.code, 400);
    }

    #[tokio::test]
    async fn every_list_view_streams_what_the_whole_value_would_encode() {
        let registry = Registry::with_builtins();
        let info = registry.get("", "v1", "pods").expect("pods");
        let items = pods(1500);
        let page = objects::ListPage {
            revision: 77,
            items: items.clone(),
            continue_token: Some("next".into()),
            remaining: Some(3),
        };
        let metadata = list_metadata(&page);
        let values: Vec<&Value> = items.iter().map(|o| &**o).collect();

        // The object list: kind, apiVersion, metadata, items, as upstream writes them.
        let mut whole = Vec::new();
        whole.extend_from_slice(b"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":");
        whole.extend_from_slice(&serde_json::to_vec(&metadata).expect("meta"));
        whole.extend_from_slice(b",\"items\":");
        whole.extend_from_slice(&serde_json::to_vec(&values).expect("items"));
        whole.push(b'}');
        let json = |view| Output {
            format: Format::Json,
            view,
        };
        let streamed = body_of(list_view_response(
            info.clone(),
            page.clone(),
            json(View::Object),
        ))
        .await;
        assert_eq!(streamed, whole);

        for include in [
            table::IncludeObject::None,
            table::IncludeObject::Metadata,
            table::IncludeObject::Object,
        ] {
            let whole = serde_json::to_vec(&table::table(
                &info,
                values.iter().copied(),
                metadata.clone(),
                include,
                true,
            ))
            .expect("table");
            let streamed = body_of(list_view_response(
                info.clone(),
                page.clone(),
                json(View::Table(include)),
            ))
            .await;
            assert_eq!(streamed, whole, "{include:?}");
        }

        let mut partial = view::partial_list_envelope(metadata.clone());
        partial.insert(
            "items".into(),
            Value::Array(values.iter().map(|o| view::partial_object(o)).collect()),
        );
        let whole = serde_json::to_vec(&Value::Object(partial)).expect("partial");
        let streamed = body_of(list_view_response(
            info.clone(),
            page.clone(),
            json(View::Metadata),
        ))
        .await;
        assert_eq!(streamed, whole);

        // Protobuf: the list message, and the metadata-only list message.
        let pb = |view| Output {
            format: Format::Protobuf,
            view,
        };
        let bytes = body_of(list_view_response(
            info.clone(),
            page.clone(),
            pb(View::Object),
        ))
        .await;
        let list = crate::protobuf::decode_object(&bytes).expect("protobuf list");
        assert_eq!(list["kind"], "PodList");
        assert_eq!(list["metadata"]["continue"], "next");
        assert_eq!(list["metadata"]["remainingItemCount"], 3);
        assert_eq!(list["items"].as_array().map(Vec::len), Some(1500));
        assert_eq!(list["items"][7]["metadata"]["name"], "pod-00007");
        assert_eq!(list["items"][7]["status"]["podIP"], "10.0.0.1");
        let bytes = body_of(list_view_response(info.clone(), page, pb(View::Metadata))).await;
        let list = crate::protobuf::decode_object(&bytes).expect("protobuf partial list");
        assert_eq!(list["kind"], "PartialObjectMetadataList");
        assert_eq!(list["items"][3]["metadata"]["labels"]["i"], "3");
        assert!(list["items"][3].get("spec").is_none());
    }
}
