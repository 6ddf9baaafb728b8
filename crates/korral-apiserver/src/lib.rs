//! A pure-Rust, Kubernetes-compatible API server.
//!
//! `korral-apiserver` serves the Kubernetes REST API (discovery, OpenAPI, CRUD, watch, CRDs,
//! garbage collection) over HTTPS with a generated CA and a bearer token, on in-memory or
//! durable storage. Real `kubectl` and kube-rs clients work against it. It is Korral's local
//! control plane (`korral up`) and test control plane (`korral-testenv`).
//!
//! ```no_run
//! use korral_apiserver::{ApiServer, ServerConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = ApiServer::start(ServerConfig::in_memory()).await?;
//! println!("serving at {}", server.url());
//! println!("{}", server.kubeconfig_yaml());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod admission;
mod aggregator;
mod apf;
mod apply;
mod auth;
mod builtin_admission;
mod controllers;
mod conversion;
mod crd;
mod cron;
mod deadline;
mod defaults;
pub mod error;
pub mod faults;
mod go_duration;
mod http;
mod inflight;
mod kinds;
pub mod kubeconfig;
mod limits;
mod meta;
mod objects;
mod openapi;
mod openapi_builtin;
mod openapi_proto;
mod patch;
mod protobuf;
mod quantity;
mod registry;
mod scale;
mod selector;
pub mod server;
pub mod signer;
mod simulate;
mod storage;
pub mod tls;
mod validation;

pub use admission::ServiceMap;
pub use error::{ApiError, Cause};
pub use faults::{
    FaultConfig, FaultConfigError, FaultLatency, FaultRule, FaultStats, Faults, RuleStats,
};
pub use inflight::{DEFAULT_MAX_MUTATING, DEFAULT_MAX_READONLY, DEFAULT_MAX_WATCHES_PER_CLIENT};
pub use server::{ApiServer, AuthorizationMode, ServerConfig, StartError, StorageMode};
pub use storage::StorageError;

/// Entry points of the parsers and engines that take untrusted input, for the fuzz targets and
/// the property tests (`tests/fuzz.rs`). Not part of the supported API.
#[doc(hidden)]
pub mod fuzzing {
    use serde_json::Value;

    /// Applies a patch (`merge`, `strategic` with a Deployment's merge keys, or `json`) to
    /// `original`; an error carries the HTTP code the server would answer.
    pub fn apply_patch(
        kind: &str,
        original: &Value,
        body: &[u8],
    ) -> Result<Value, crate::ApiError> {
        // Built once: the fuzzers call this thousands of times.
        static DEPLOYMENTS: std::sync::LazyLock<
            Option<std::sync::Arc<crate::registry::ResourceInfo>>,
        > = std::sync::LazyLock::new(|| {
            crate::registry::Registry::with_builtins().get("apps", "v1", "deployments")
        });
        let info = DEPLOYMENTS
            .as_ref()
            .ok_or_else(|| crate::ApiError::internal("deployments are not served"))?;
        let strategy = crate::patch::BuiltinStrategy::new(info);
        let kind = match kind {
            "merge" => crate::patch::PatchType::Merge,
            "strategic" => crate::patch::PatchType::Strategic,
            _ => crate::patch::PatchType::Json,
        };
        crate::patch::apply_patch(kind, original, body, Some(&strategy))
    }

    /// Parses `text` as a label selector and as a field selector: the HTTP code of each
    /// refusal (`None` when it parses).
    pub fn parse_selectors(text: &str) -> (Option<u16>, Option<u16>) {
        (
            crate::selector::LabelSelector::parse(text)
                .err()
                .map(|e| e.code),
            crate::selector::FieldSelector::parse(text)
                .err()
                .map(|e| e.code),
        )
    }

    /// Decodes a protobuf-encoded object (with or without the `k8s\0` envelope).
    pub fn decode_protobuf(bytes: &[u8]) {
        let _ = crate::protobuf::decode_object(bytes);
    }

    /// Decodes a `k8s\0` protobuf object body to its JSON (for tests of protobuf responses).
    pub fn decode_protobuf_object(bytes: &[u8]) -> Result<Value, String> {
        crate::protobuf::decode_object(bytes).map_err(|e| e.to_string())
    }

    /// Decodes one protobuf watch event (a frame without its 4-byte length) to
    /// `{"type", "object"}`.
    pub fn decode_protobuf_watch_event(bytes: &[u8]) -> Result<Value, String> {
        crate::protobuf::decode_watch_event(bytes).map_err(|e| e.to_string())
    }

    /// Encodes a JSON object as a `k8s\0` protobuf body.
    pub fn encode_protobuf_object(object: &Value) -> Result<Vec<u8>, String> {
        crate::protobuf::encode_object(object).map_err(|e| e.to_string())
    }

    /// Checks `schema` as a CRD schema (structure and CEL rules) and validates `value` with it.
    pub fn check_schema_and_validate(value: &Value, schema: &Value) {
        let _ = crate::validation::schema::check_structural(schema, "s");
        let _ = crate::validation::schema::validate(value, schema, "");
        let _ = crate::validation::cel::check_schema(schema, "s");
        let _ = crate::validation::cel::validate(value, None, schema);
    }
}
