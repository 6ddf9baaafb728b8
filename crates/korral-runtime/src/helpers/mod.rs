//! Reconcile helpers, as controller-runtime's `controllerutil` offers them in Go:
//!
//! - [`owner`]: controller and owner references (garbage collection, `owns::<C>()` mapping);
//! - [`finalizer`]: add/remove a finalizer with optimistic concurrency, and a finalizer flow
//!   ([`finalizer::finalize`]) that runs apply or cleanup;
//! - [`write`](mod@write): create-or-update, create-or-patch, status patch/replace through the status
//!   subresource, server-side apply with a field manager;
//! - [`events`]: an [`events::EventRecorder`] writing `events.k8s.io/v1` Events, with repeats
//!   folded into a series.

pub mod events;
pub mod finalizer;
pub mod owner;
pub mod write;
