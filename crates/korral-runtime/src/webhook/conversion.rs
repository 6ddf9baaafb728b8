//! Conversion webhooks by hub and spokes (controller-runtime's `conversion.Hub` /
//! `Convertible`): one version of a kind is the [`Hub`]; every other version (a spoke)
//! converts to and from it with `From` impls. The `/convert` handler ([`ConversionWebhook`])
//! answers ConversionReview v1: each object goes spoke → hub → desired spoke.
//!
//! Metadata is kept as the API server requires: the converted object gets the request object's
//! metadata (name, namespace, uid, resourceVersion, ...) and only its labels and annotations come
//! from the converter, the only metadata a conversion may change. A failure answers `Failed`
//! with a message, which the API server reports as `conversion webhook for <group/version>,
//! Kind=<kind> failed: <message>`.
//!
//! ```
//! use korral_runtime::webhook::conversion::{ConversionWebhook, Hub, HubAndSpokes};
//!
//! mod v1 {
//!     # use kube::CustomResource;
//!     # use schemars::JsonSchema;
//!     # use serde::{Deserialize, Serialize};
//!     #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
//!     #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//!     pub struct WidgetSpec { pub size: i32 }
//! }
//! mod v2 {
//!     # use kube::CustomResource;
//!     # use schemars::JsonSchema;
//!     # use serde::{Deserialize, Serialize};
//!     #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
//!     #[kube(group = "example.com", version = "v2", kind = "Widget", namespaced)]
//!     pub struct WidgetSpec { pub replicas: i32 }
//! }
//!
//! impl Hub for v2::Widget {}
//! impl From<v1::Widget> for v2::Widget {
//!     fn from(w: v1::Widget) -> Self {
//!         Self { metadata: w.metadata, spec: v2::WidgetSpec { replicas: w.spec.size } }
//!     }
//! }
//! impl From<v2::Widget> for v1::Widget {
//!     fn from(w: v2::Widget) -> Self {
//!         Self { metadata: w.metadata, spec: v1::WidgetSpec { size: w.spec.replicas } }
//!     }
//! }
//!
//! # fn main() {
//! let webhook = ConversionWebhook::new()
//!     .kind(HubAndSpokes::<v2::Widget>::new().spoke::<v1::Widget>())
//!     .expect("one group and kind");
//! assert_eq!(webhook.versions("example.com", "Widget"), ["example.com/v1", "example.com/v2"]);
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;

use kube::Resource;
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::response::StatusSummary;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The version of a kind every other version converts through (a marker).
pub trait Hub: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + 'static {}

/// A spoke of the hub `H`: converts to it and back with `From` impls, or `TryFrom` impls
/// when a conversion can fail (their error becomes the `Failed` message). Implemented for every
/// such type.
pub trait Convertible<H: Hub>:
    Resource<DynamicType = ()>
    + Serialize
    + DeserializeOwned
    + TryFrom<H, Error: fmt::Display>
    + TryInto<H, Error: fmt::Display>
    + Send
    + 'static
{
}

impl<H, S> Convertible<H> for S
where
    H: Hub,
    S: Resource<DynamicType = ()>
        + Serialize
        + DeserializeOwned
        + TryFrom<H, Error: fmt::Display>
        + TryInto<H, Error: fmt::Display>
        + Send
        + 'static,
{
}

/// Why a kind could not be registered for conversion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    /// A spoke is of another group or kind than its hub.
    #[error("the spoke {spoke} is not of the hub's group and kind {group}/{kind}")]
    SpokeOfAnotherKind {
        /// The spoke's `apiVersion, Kind=...`.
        spoke: String,
        /// The hub's group.
        group: String,
        /// The hub's kind.
        kind: String,
    },
    /// The kind is registered already.
    #[error("conversion of {group}/{kind} is registered already")]
    KindRegisteredTwice {
        /// The group.
        group: String,
        /// The kind.
        kind: String,
    },
}

type ToHub<H> = fn(Value) -> Result<H, String>;
type FromHub<H> = fn(H) -> Result<Value, String>;

/// Decodes an object of `K`.
fn decode<K: Resource<DynamicType = ()> + DeserializeOwned>(object: Value) -> Result<K, String> {
    serde_json::from_value::<K>(object)
        .map_err(|e| format!("decoding the {} object: {e}", K::api_version(&())))
}

/// Encodes an object of `K`.
fn encode<K: Resource<DynamicType = ()> + Serialize>(object: K) -> Result<Value, String> {
    serde_json::to_value(object)
        .map_err(|e| format!("encoding the {} object: {e}", K::api_version(&())))
}

fn spoke_to_hub<H: Hub, S: Convertible<H>>(object: Value) -> Result<H, String> {
    decode::<S>(object)?.try_into().map_err(|e| e.to_string())
}

fn hub_to_spoke<H: Hub, S: Convertible<H>>(hub: H) -> Result<Value, String> {
    encode(S::try_from(hub).map_err(|e| e.to_string())?)
}

/// A kind's hub `H` and its spokes, keyed by `apiVersion`.
pub struct HubAndSpokes<H: Hub> {
    versions: BTreeMap<String, (ToHub<H>, FromHub<H>)>,
    errors: Vec<ConversionError>,
}

impl<H: Hub> fmt::Debug for HubAndSpokes<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HubAndSpokes")
            .field("versions", &self.versions.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl<H: Hub> Default for HubAndSpokes<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H: Hub> HubAndSpokes<H> {
    /// The hub alone.
    pub fn new() -> Self {
        let mut versions: BTreeMap<String, (ToHub<H>, FromHub<H>)> = BTreeMap::new();
        versions.insert(H::api_version(&()).into_owned(), (decode::<H>, encode::<H>));
        Self {
            versions,
            errors: Vec::new(),
        }
    }

    /// Adds the spoke `S` (of the hub's group and kind).
    #[must_use]
    pub fn spoke<S: Convertible<H>>(mut self) -> Self {
        if S::group(&()) != H::group(&()) || S::kind(&()) != H::kind(&()) {
            self.errors.push(ConversionError::SpokeOfAnotherKind {
                spoke: format!("{}, Kind={}", S::api_version(&()), S::kind(&())),
                group: H::group(&()).into_owned(),
                kind: H::kind(&()).into_owned(),
            });
            return self;
        }
        self.versions.insert(
            S::api_version(&()).into_owned(),
            (spoke_to_hub::<H, S>, hub_to_spoke::<H, S>),
        );
        self
    }
}

/// A kind's conversions with the type erased.
trait ConvertKind: Send + Sync {
    fn versions(&self) -> Vec<String>;
    /// The hub's version (`v2`).
    fn hub_version(&self) -> String;
    fn convert(&self, object: Value, desired: &str) -> Result<Value, String>;
}

impl<H: Hub> ConvertKind for HubAndSpokes<H> {
    fn versions(&self) -> Vec<String> {
        self.versions.keys().cloned().collect()
    }

    fn hub_version(&self) -> String {
        H::version(&()).into_owned()
    }

    fn convert(&self, object: Value, desired: &str) -> Result<Value, String> {
        let from = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let (to_hub, _) = self
            .versions
            .get(&from)
            .ok_or_else(|| format!("unsupported source apiVersion {from:?}"))?;
        let (_, from_hub) = self
            .versions
            .get(desired)
            .ok_or_else(|| format!("unsupported desired apiVersion {desired:?}"))?;
        from_hub(to_hub(object)?)
    }
}

/// The `/convert` handler: converts objects of the registered kinds between their versions.
#[derive(Default)]
pub struct ConversionWebhook {
    kinds: BTreeMap<(String, String), Box<dyn ConvertKind>>,
}

impl fmt::Debug for ConversionWebhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConversionWebhook")
            .field("kinds", &self.kinds.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The group of an `apiVersion` (`""` for `v1`).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

impl ConversionWebhook {
    /// No kinds yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the conversions of one kind.
    pub fn kind<H: Hub>(mut self, kind: HubAndSpokes<H>) -> Result<Self, ConversionError> {
        if let Some(error) = kind.errors.first() {
            return Err(error.clone());
        }
        let key = (H::group(&()).into_owned(), H::kind(&()).into_owned());
        if self.kinds.contains_key(&key) {
            return Err(ConversionError::KindRegisteredTwice {
                group: key.0,
                kind: key.1,
            });
        }
        self.kinds.insert(key, Box::new(kind));
        Ok(self)
    }

    /// The `apiVersion`s registered for `group` and `kind` (empty when not registered).
    pub fn versions(&self, group: &str, kind: &str) -> Vec<String> {
        self.kinds
            .get(&(group.to_owned(), kind.to_owned()))
            .map(|k| k.versions())
            .unwrap_or_default()
    }

    /// The registered kinds with their hubs, for the operator's manifests (each CRD's
    /// conversion stanza and storage version).
    pub fn converted_kinds(&self) -> Vec<crate::manifests::ConvertedKind> {
        self.kinds
            .iter()
            .map(
                |((group, kind), converter)| crate::manifests::ConvertedKind {
                    group: group.clone(),
                    kind: kind.clone(),
                    hub_version: converter.hub_version(),
                },
            )
            .collect()
    }

    /// Converts one object to `desired`, keeping its metadata but labels and annotations.
    fn convert_object(&self, object: Value, desired: &str) -> Result<Value, String> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let group = group_of(&api_version);
        if group != group_of(desired) {
            return Err(format!(
                "{kind} {name:?}: cannot convert {api_version} to {desired}, another group"
            ));
        }
        if api_version == desired {
            return Ok(object);
        }
        let converter = self
            .kinds
            .get(&(group.to_owned(), kind.clone()))
            .ok_or_else(|| format!("no conversion registered for {api_version}, Kind={kind}"))?;
        let original_metadata = object.get("metadata").cloned();
        let mut converted = converter
            .convert(object, desired)
            .map_err(|e| format!("converting {kind} {name:?} to {desired}: {e}"))?;
        let Value::Object(fields) = &mut converted else {
            return Err(format!(
                "converting {kind} {name:?} to {desired}: the result is not an object"
            ));
        };
        fields.insert("apiVersion".to_owned(), Value::String(desired.to_owned()));
        fields.insert("kind".to_owned(), Value::String(kind));
        let mut metadata = match original_metadata {
            Some(Value::Object(metadata)) => metadata,
            _ => serde_json::Map::new(),
        };
        let changed = fields.get("metadata").cloned();
        for key in ["labels", "annotations"] {
            match changed.as_ref().and_then(|m| m.get(key)) {
                Some(value) if !value.is_null() => {
                    metadata.insert(key.to_owned(), value.clone());
                }
                _ => {
                    metadata.remove(key);
                }
            }
        }
        fields.insert("metadata".to_owned(), Value::Object(metadata));
        Ok(converted)
    }

    /// The response to `request`: every object converted, in order, or `Failed` with the
    /// first error.
    pub fn convert(&self, request: ConversionRequest) -> ConversionResponse {
        let desired = request.desired_api_version.clone();
        let objects = request.objects.clone();
        let response = ConversionResponse::for_request(request);
        let converted: Result<Vec<Value>, String> = objects
            .into_iter()
            .map(|object| self.convert_object(object, &desired))
            .collect();
        match converted {
            Ok(objects) => {
                let mut response = response.success(objects);
                response.result.metadata = Some(Default::default());
                response
            }
            Err(message) => response.failure(Status {
                status: Some(StatusSummary::Failure),
                code: 0,
                message,
                metadata: Some(Default::default()),
                reason: String::new(),
                details: None,
            }),
        }
    }

    /// The ConversionReview answering the ConversionReview `body`; the error (a bad request)
    /// says why it could not be read.
    pub fn review(&self, body: &[u8]) -> Result<Value, String> {
        let review: ConversionReview = serde_json::from_slice(body)
            .map_err(|e| format!("decoding the ConversionReview: {e}"))?;
        let request = ConversionRequest::from_review(review)
            .map_err(|_| "conversion request is empty".to_owned())?;
        let response = self.convert(request).into_review();
        serde_json::to_value(response).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn objects_in_the_desired_version_pass_and_foreign_groups_fail() {
        let webhook = ConversionWebhook::new();
        let object = json!({"apiVersion": "x.io/v1", "kind": "W", "metadata": {"name": "a"}});
        assert_eq!(
            webhook.convert_object(object.clone(), "x.io/v1"),
            Ok(object.clone())
        );
        let err = webhook
            .convert_object(object.clone(), "y.io/v1")
            .expect_err("other group");
        assert!(err.contains("another group"), "{err}");
        let err = webhook
            .convert_object(object, "x.io/v2")
            .expect_err("unregistered");
        assert_eq!(err, "no conversion registered for x.io/v1, Kind=W");
    }

    impl Hub for ConfigMap {}

    #[test]
    fn registering_twice_is_refused() {
        let webhook = ConversionWebhook::new()
            .kind(HubAndSpokes::<ConfigMap>::new())
            .expect("first");
        assert_eq!(webhook.versions("", "ConfigMap"), ["v1"]);
        assert!(matches!(
            webhook.kind(HubAndSpokes::<ConfigMap>::new()),
            Err(ConversionError::KindRegisteredTwice { .. })
        ));
    }
}
