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

pub mod admission;
pub mod apply;
pub mod auth;
mod builtin_admission;
pub mod controllers;
pub mod conversion;
pub mod crd;
pub mod defaults;
pub mod error;
pub mod faults;
pub mod http;
pub mod inflight;
mod kinds;
pub mod kubeconfig;
pub mod limits;
pub mod meta;
pub mod objects;
pub mod openapi;
pub mod openapi_builtin;
pub mod openapi_proto;
pub mod patch;
pub mod protobuf;
mod quantity;
pub mod registry;
pub mod scale;
pub mod selector;
pub mod server;
pub mod simulate;
pub mod storage;
pub mod tls;
pub mod validation;

pub use error::{ApiError, Cause};
pub use faults::{
    FaultConfig, FaultConfigError, FaultLatency, FaultRule, FaultStats, Faults, RuleStats,
};
pub use server::{ApiServer, AuthorizationMode, ServerConfig, StartError, StorageMode};
