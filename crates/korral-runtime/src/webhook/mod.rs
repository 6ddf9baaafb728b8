//! Webhooks served by the operator, as controller-runtime's `webhook` package: admission
//! (defaulting and validating) and conversion.
//!
//! - [`WebhookServer`]: HTTPS (port 9443, certificate directory `tls.crt` / `tls.key`, default
//!   `$TMPDIR/k8s-webhook-server/serving-certs`, reloaded when the files change), a readiness
//!   check, controller-runtime's webhook metrics, graceful shutdown; a [`Manager`] runnable
//!   ([`WebhookServer::add_to`]).
//! - Admission: AdmissionReview v1 is kube's ([`AdmissionRequest`], [`AdmissionResponse`]),
//!   sent back as upstream reads it (base64 JSONPatch, a `status` with a code). Typed
//!   [`Defaulter`] (mutate the object; the server answers with the JSONPatch) and [`Validator`]
//!   (create / update / delete, returning [`Warnings`] or a [`Denial`] whose [`FieldError`]s
//!   become `details.causes`), served on kubebuilder's paths ([`mutate_path`],
//!   [`validate_path`]); raw handlers for any kind ([`WebhookServer::raw`]).
//! - [`conversion`]: hub and spokes, the `/convert` handler.
//! - [`certs`]: self-managed certificates: a CA and a serving certificate kept in a Secret,
//!   written to the certificate directory, the `caBundle` injected into the webhook
//!   configurations and CRDs.
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use korral_runtime::manager::Manager;
//! use korral_runtime::webhook::{Denial, FieldError, Validator, Warnings, WebhookServer};
//! use kube::core::{DynamicObject, admission::AdmissionRequest};
//!
//! struct NoEmptyValues;
//!
//! impl Validator<ConfigMap> for NoEmptyValues {
//!     async fn validate_create(
//!         &self,
//!         _request: &AdmissionRequest<DynamicObject>,
//!         cm: &ConfigMap,
//!     ) -> Result<Warnings, Denial> {
//!         let errors: Vec<FieldError> = cm.data.iter().flatten()
//!             .filter(|(_, v)| v.is_empty())
//!             .map(|(k, _)| FieldError::required(&format!("data[{k}]"), ""))
//!             .collect();
//!         if errors.is_empty() { Ok(Vec::new()) } else { Err(Denial::invalid(errors)) }
//!     }
//!     async fn validate_update(
//!         &self,
//!         request: &AdmissionRequest<DynamicObject>,
//!         _old: &ConfigMap,
//!         new: &ConfigMap,
//!     ) -> Result<Warnings, Denial> {
//!         self.validate_create(request, new).await
//!     }
//! }
//!
//! # async fn run(mut manager: Manager) -> Result<(), Box<dyn std::error::Error>> {
//! let mut server = WebhookServer::new();
//! server.validator::<ConfigMap, _>(NoEmptyValues)?; // /validate--v1-configmap
//! server.add_to(&mut manager)?;
//! # Ok(())
//! # }
//! ```
//!
//! [`Manager`]: crate::manager::Manager

pub mod certs;
mod certwatcher;
pub mod conversion;
mod defaulter;
mod denial;
mod handler;
mod metrics;
mod path;
mod review;
mod server;
mod validator;

pub use certwatcher::{CertError, CertWatcher};
pub use defaulter::{Defaulter, DefaultingHandler};
pub use denial::{DENIAL_CODE, Denial, FieldError, FieldErrorType, Warnings};
pub use handler::{AdmissionHandler, Raw, RawAsync, deny, patch_response};
pub use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
pub use path::{CONVERT_PATH, mutate_path, validate_path};
pub use review::{ADMISSION_V1, ADMISSION_V1BETA1, decode_request, encode_response, errored};
pub use server::{
    BAD_CERT_RETRIES, DEFAULT_CERT_NAME, DEFAULT_CERT_POLL_INTERVAL, DEFAULT_KEY_NAME,
    DEFAULT_PORT, MAX_REQUEST_BYTES, READY_CHECK, RunningWebhookServer, WebhookError,
    WebhookServer, default_cert_dir,
};
pub use validator::{ValidatingHandler, Validator};
