//! Conversion of custom resources between the versions of their CRD.
//!
//! Objects are stored in the CRD's storage version (or, after the storage version changed, in
//! the version they were last written in). With `spec.conversion.strategy: None` a version
//! change only rewrites `apiVersion` ([`crate::objects::served`]); with `Webhook` the server posts
//! a `ConversionReview` to the CRD's conversion webhook, as kube-apiserver does: one review per
//! object or per list page (only the items in another version are sent), the response checked
//! (uid, result, count, apiVersion, kind, name, namespace and uid unchanged), metadata other than
//! labels and annotations restored from the original, and the result pruned and defaulted by the
//! target version's schema. Failures answer 500 with upstream's
//! `conversion webhook for <group>/<version>, Kind=<kind> failed: …`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause};
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;
use crate::storage::Object;
use crate::validation::{names, schema};

/// How long a conversion webhook may take (upstream's fixed 30 s).
const TIMEOUT_SECONDS: u64 = 30;

/// What a CRD declares about converting between its versions.
#[derive(Debug, Clone, Default)]
pub struct CrdVersions {
    /// The version new writes are stored in.
    pub storage_version: String,
    /// The conversion webhook, when `spec.conversion.strategy` is `Webhook`.
    pub webhook: Option<ConversionWebhook>,
    /// Every version's schema (served or not), for pruning and defaulting converted objects.
    pub schemas: BTreeMap<String, Option<Arc<Value>>>,
}

/// A CRD's conversion webhook (`spec.conversion.webhook`).
#[derive(Debug, Clone)]
pub struct ConversionWebhook {
    /// `clientConfig`: `url` or `service`, and `caBundle`.
    pub client_config: Value,
    /// `conversionReviewVersions`, in preference order.
    pub review_versions: Vec<String>,
}

impl CrdVersions {
    /// What the CRD object `crd` declares.
    pub fn of(crd: &Value) -> Self {
        let versions = meta::path(crd, "spec.versions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let name_of = |v: &Value| {
            v.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let storage_version = crate::crd::storage_version(crd).unwrap_or_default();
        let schemas = versions
            .iter()
            .map(|v| {
                let schema = meta::path(v, "schema.openAPIV3Schema")
                    .cloned()
                    .map(Arc::new);
                (name_of(v), schema)
            })
            .collect();
        let strategy = meta::path(crd, "spec.conversion.strategy").and_then(Value::as_str);
        let webhook = (strategy == Some("Webhook")).then(|| ConversionWebhook {
            client_config: meta::path(crd, "spec.conversion.webhook.clientConfig")
                .cloned()
                .unwrap_or_else(|| json!({})),
            review_versions: meta::strings(meta::path(
                crd,
                "spec.conversion.webhook.conversionReviewVersions",
            )),
        });
        Self {
            storage_version,
            webhook,
            schemas,
        }
    }
}

/// The conversion webhook of `info`'s CRD, if its objects are converted by one.
pub(crate) fn webhook_of(info: &ResourceInfo) -> Option<&ConversionWebhook> {
    info.custom.as_ref()?.versions.webhook.as_ref()
}

/// The items of a list as clients of `info`'s version see them (stored objects, or objects
/// written in another version): converted by the CRD's webhook when it has one (in one review),
/// else as [`crate::objects::served`] shows them.
pub(crate) async fn to_served(
    objects: &Objects,
    info: &ResourceInfo,
    items: Vec<Object>,
) -> Result<Vec<Object>, ApiError> {
    convert_served(objects, info, items, false).await
}

/// [`to_served`] of a list's items or (`single`) of one object. Failures name the first
/// converted object's version and the kind, never the list kind: upstream converts each
/// object as its storage decodes it, so its messages name an object's GroupVersionKind.
async fn convert_served(
    objects: &Objects,
    info: &ResourceInfo,
    items: Vec<Object>,
    single: bool,
) -> Result<Vec<Object>, ApiError> {
    let Some(webhook) = webhook_of(info) else {
        return Ok(items
            .iter()
            .map(|o| crate::objects::served(info, o))
            .collect());
    };
    let wanted = info.api_version();
    let pending: Vec<usize> = (0..items.len())
        .filter(|&i| meta::api_version(&items[i]) != wanted)
        .collect();
    if pending.is_empty() {
        return Ok(items);
    }
    let originals: Vec<Value> = pending.iter().map(|&i| (*items[i]).clone()).collect();
    let subject = gvk(info, meta::api_version(&items[pending[0]]), &info.kind);
    let converted = call(
        objects, info, webhook, &originals, &wanted, &subject, single,
    )
    .await?;
    let mut out = items;
    for (slot, object) in pending.into_iter().zip(converted) {
        out[slot] = Arc::new(object);
    }
    Ok(out)
}

/// One object as clients of `info`'s version see it (see [`to_served`]).
pub(crate) async fn to_served_one(
    objects: &Objects,
    info: &ResourceInfo,
    object: &Object,
) -> Result<Object, ApiError> {
    // Every get, write response and watch event comes here: most kinds need no review.
    if webhook_of(info).is_none() {
        return Ok(crate::objects::served(info, object));
    }
    let mut converted = convert_served(objects, info, vec![object.clone()], true).await?;
    converted
        .pop()
        .ok_or_else(|| ApiError::internal("conversion returned no object"))
}

/// An object written in `info`'s version, in the shape it is stored in: converted to the
/// storage version by the CRD's webhook when it has one (other kinds convert inside the
/// guarded write, see [`crate::kinds::strategy::Strategy::convert_for_storage`]).
pub(crate) async fn to_storage(
    objects: &Objects,
    info: &ResourceInfo,
    object: Value,
) -> Result<Value, ApiError> {
    let Some(custom) = info.custom.as_ref() else {
        return Ok(object);
    };
    let storage = custom.versions.storage_version.clone();
    if storage.is_empty() {
        return Ok(object);
    }
    to_version(objects, info, object, &storage).await
}

/// An object of `info`'s CRD in the shape of its `version`: converted by the CRD's webhook
/// when it has one and the object is in another version (unchanged otherwise).
pub(crate) async fn to_version(
    objects: &Objects,
    info: &ResourceInfo,
    object: Value,
    version: &str,
) -> Result<Value, ApiError> {
    let Some(webhook) = webhook_of(info) else {
        return Ok(object);
    };
    let wanted = format!("{}/{version}", info.group);
    if meta::api_version(&object) == wanted {
        return Ok(object);
    }
    let subject = gvk(info, meta::api_version(&object), &info.kind);
    let mut converted = call(objects, info, webhook, &[object], &wanted, &subject, true).await?;
    converted
        .pop()
        .ok_or_else(|| ApiError::internal("conversion returned no object"))
}

/// Upstream's `GroupVersionKind` text, `group/version, Kind=Kind`.
fn gvk(info: &ResourceInfo, api_version: &str, kind: &str) -> String {
    let api_version = if api_version.is_empty() {
        info.api_version()
    } else {
        api_version.to_string()
    };
    format!("{api_version}, Kind={kind}")
}

/// Posts one ConversionReview and checks its answer; answers the converted objects in order.
/// `single`: one object was converted (not a list), which words upstream's messages.
async fn call(
    objects: &Objects,
    info: &ResourceInfo,
    webhook: &ConversionWebhook,
    originals: &[Value],
    desired: &str,
    subject: &str,
    single: bool,
) -> Result<Vec<Value>, ApiError> {
    let failed = |why: String| {
        ApiError::new(
            500,
            "",
            format!("conversion webhook for {subject} failed: {why}"),
        )
    };
    let review_version = webhook
        .review_versions
        .iter()
        .find(|v| *v == "v1" || *v == "v1beta1")
        .ok_or_else(|| failed("no supported conversion review versions".into()))?;
    let review_api_version = format!("apiextensions.k8s.io/{review_version}");
    let uid = uuid::Uuid::new_v4().to_string();
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": review_api_version,
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": originals},
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    });
    let body = serde_json::to_vec(&review).map_err(|e| failed(e.to_string()))?;
    let target = crate::admission::client::target(
        objects,
        objects.webhook_services(),
        &webhook.client_config,
        TIMEOUT_SECONDS,
    )
    .map_err(failed)?;
    let ca_bundle = webhook
        .client_config
        .get("caBundle")
        .and_then(Value::as_str);
    let answer = crate::admission::client::post(
        &target,
        ca_bundle,
        body,
        Duration::from_secs(TIMEOUT_SECONDS),
    )
    .await
    .map_err(|e| failed(e.trim_start_matches("failed to call webhook: ").to_string()))?;
    let converted = converted_objects(&answer, &review_api_version, &uid).map_err(failed)?;
    if converted.len() != originals.len() {
        return Err(ApiError::new(
            500,
            "",
            format!(
                "conversion webhook for {subject} returned {} objects, expected {}",
                converted.len(),
                originals.len()
            ),
        ));
    }
    let at = |i: usize| {
        if single {
            String::new()
        } else {
            format!(" at index {i}")
        }
    };
    let mut out = Vec::with_capacity(converted.len());
    for (i, (original, mut object)) in originals.iter().zip(converted).enumerate() {
        let invalid = |why: String| {
            let what = if single { "object" } else { "converted object" };
            ApiError::new(
                500,
                "",
                format!(
                    "conversion webhook for {subject} returned invalid {what}{}: {why}",
                    if single { String::new() } else { at(i) }
                ),
            )
        };
        let got_version = meta::api_version(&object).to_string();
        if got_version != desired {
            return Err(invalid(format!(
                "invalid groupVersion (expected {desired}, received {got_version})"
            )));
        }
        let (expected_kind, got_kind) = (
            original.get("kind").and_then(Value::as_str).unwrap_or(""),
            object.get("kind").and_then(Value::as_str).unwrap_or(""),
        );
        if expected_kind != got_kind {
            return Err(invalid(format!(
                "invalid kind (expected {expected_kind}, received {got_kind})"
            )));
        }
        for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
            let before = meta::metadata(original)
                .and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .unwrap_or("");
            let after = meta::metadata(&object)
                .and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .unwrap_or("");
            if before != after {
                return Err(invalid(format!(
                    "must have the same {what}: {before} != {after}"
                )));
            }
        }
        restore_metadata(original, &mut object).map_err(|why| {
            ApiError::new(
                500,
                "",
                format!(
                    "conversion webhook for {subject} returned invalid metadata{}: {why}",
                    at(i)
                ),
            )
        })?;
        shape_for(info, desired, &mut object);
        out.push(object);
    }
    Ok(out)
}

/// The `convertedObjects` of a webhook's answer, after upstream's checks of the review.
fn converted_objects(
    answer: &[u8],
    review_api_version: &str,
    uid: &str,
) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(answer).map_err(|e| e.to_string())?;
    let (api_version, kind) = (
        review
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or(""),
        review.get("kind").and_then(Value::as_str).unwrap_or(""),
    );
    let v1 = review_api_version.ends_with("/v1");
    if v1 && (api_version != review_api_version || kind != "ConversionReview") {
        return Err(format!(
            "expected webhook response of {review_api_version}, Kind=ConversionReview, got {api_version}, Kind={kind}"
        ));
    }
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".into());
    };
    let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if v1 && got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let result = response.get("result").cloned().unwrap_or(Value::Null);
    let status = result.get("status").and_then(Value::as_str).unwrap_or("");
    if status != "Success" {
        let message = result.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message.to_string()
        });
    }
    match response.get("convertedObjects") {
        Some(Value::Array(items)) => {
            for item in items {
                if !item.is_object() {
                    return Err("converted objects must be objects".into());
                }
            }
            Ok(items.clone())
        }
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err("response.convertedObjects must be a list".into()),
    }
}

/// Upstream's `restoreObjectMeta`: the converted object keeps the original's metadata, except
/// labels and annotations, which the webhook may change (they must stay valid).
fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                json_type(other)
            ));
        }
        None => return Err("missing metadata in converted object".into()),
    };
    let mut restored: Map<String, Value> = meta::metadata(original).cloned().unwrap_or_default();
    for (field, path) in [
        ("labels", "metadata.labels"),
        ("annotations", "metadata.annotation"),
    ] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
            }
            Some(Value::Object(values)) => {
                if let Some((key, v)) = values.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{key}] must be a string, but is {} in converted object",
                        json_type(v)
                    ));
                }
                let changed = restored.get(field) != Some(&Value::Object(values.clone()));
                if changed {
                    let value = Value::Object(values.clone());
                    let causes = if field == "labels" {
                        names::validate_labels(&value, path)
                    } else {
                        names::validate_annotations(&value, path)
                    };
                    if !causes.is_empty() {
                        return Err(aggregate(&causes));
                    }
                }
                restored.insert(field.to_string(), Value::Object(values.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    json_type(other)
                ));
            }
        }
    }
    if let Some(map) = converted.as_object_mut() {
        map.insert("metadata".into(), Value::Object(restored));
    }
    Ok(())
}

/// Field errors as Go's `ErrorList.ToAggregate()` prints them.
fn aggregate(causes: &[Cause]) -> String {
    let texts: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    match texts.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Go's name of a JSON value's decoded type, for messages.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Prunes and defaults a converted object by its version's schema, as upstream's codec does
/// with what a webhook answers.
fn shape_for(info: &ResourceInfo, api_version: &str, object: &mut Value) {
    let version = api_version.rsplit('/').next().unwrap_or("");
    let Some(custom) = info.custom.as_ref() else {
        return;
    };
    if let Some(Some(s)) = custom.versions.schemas.get(version) {
        schema::prune(object, s);
        schema::drop_non_nullable_nulls(object, s);
        schema::apply_defaults(object, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_are_checked_as_upstream() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        let bytes = serde_json::to_vec(&ok).expect("json");
        assert_eq!(
            converted_objects(&bytes, "apiextensions.k8s.io/v1", "u").expect("ok"),
            vec![json!({"a": 1})]
        );
        assert_eq!(
            converted_objects(&bytes, "apiextensions.k8s.io/v1", "other").expect_err("uid"),
            "expected response.uid=\"other\", got \"u\""
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Failure", "message": "refused"}}});
        let bytes = serde_json::to_vec(&failed).expect("json");
        assert_eq!(
            converted_objects(&bytes, "apiextensions.k8s.io/v1", "u").expect_err("fail"),
            "refused"
        );
        let wrong = json!({"apiVersion": "v1", "kind": "Status"});
        let bytes = serde_json::to_vec(&wrong).expect("json");
        assert_eq!(
            converted_objects(&bytes, "apiextensions.k8s.io/v1", "u").expect_err("kind"),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got v1, Kind=Status"
        );
    }

    #[test]
    fn only_labels_and_annotations_survive_from_the_webhook() {
        let original = json!({"metadata": {"name": "a", "uid": "1", "resourceVersion": "5",
            "labels": {"x": "1"}, "generation": 2}});
        let mut converted = json!({"metadata": {"name": "a", "uid": "1", "generation": 9,
            "labels": {"x": "2"}, "annotations": {"n": "v"}}, "spec": {}});
        restore_metadata(&original, &mut converted).expect("restore");
        assert_eq!(
            converted["metadata"],
            json!({"name": "a", "uid": "1", "resourceVersion": "5", "generation": 2,
                "labels": {"x": "2"}, "annotations": {"n": "v"}})
        );
        let mut bad = json!({"metadata": {"labels": {"x": 1}}});
        assert_eq!(
            restore_metadata(&original, &mut bad).expect_err("bad"),
            "metadata.labels[x] must be a string, but is int64 in converted object"
        );
        let mut invalid = json!({"metadata": {"labels": {"x": "not valid!"}}});
        let why = restore_metadata(&original, &mut invalid).expect_err("invalid");
        assert!(
            why.starts_with("metadata.labels: Invalid value: \"not valid!\""),
            "{why}"
        );
    }
}
