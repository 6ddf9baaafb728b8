//! Korral's controller runtime, built on kube-rs.
//!
//! The runtime is being built piece by piece (see the runtime issue). Available today:
//!
//! - [`queue`]: a work queue with controller-runtime semantics (deduplication, one worker per
//!   key, requeue-after where the earliest time wins, per-key exponential backoff from 5 ms to
//!   1000 s) and workers with a concurrency limit and an optional reconcile timeout;
//! - [`reconcile`]: the reconcile contract ([`reconcile::Action`], transient and terminal errors);
//! - [`leader`]: leader election on a `coordination.k8s.io/v1` Lease;
//! - [`metrics`]: a Prometheus registry with the controller-runtime series, a `/metrics` server
//!   and `/healthz` `/readyz` probes with named checks;
//! - [`conditions`]: `metav1.Condition` helpers with a correct `lastTransitionTime`;
//! - [`cache`]: shared caches, one list+watch per type and scope however many readers, with
//!   selectors, a transform hook (drops `managedFields` by default), owner and label lookups and
//!   change events carrying the previous object;
//! - [`client`]: the client handed to reconcilers: reads from the shared cache where the type
//!   is cached (get, typed list queries by namespace, labels, fields and owner, unstructured and
//!   metadata-only objects), writes to the API server, read-your-writes, request counts;
//! - [`helpers`]: controller and owner references, the finalizer flow, create-or-update,
//!   create-or-patch, status writes, server-side apply and an event recorder.
//! - [`controller`]: the controller builder (`for_`, `owns`, `watches` with `Kind` and `Channel`
//!   sources, object / owner / map-function handlers, predicates with and/or/not), a concurrency
//!   limit and a reconcile timeout, with the controller-runtime metrics;
//! - [`manager`]: runs controllers and runnables over one shared cache, with metrics and probe
//!   servers, readiness after cache sync, Lease leader election, ordered graceful shutdown and
//!   [`manager::shutdown_signal`] for Ctrl-C / SIGTERM;
//! - [`trigger`]: a periodic trigger, a (leader-elected) runnable ticking on a channel source,
//!   for controllers that poll something outside the cluster.
//! - [`manifests`]: manifests from code: CRDs from the derived types, RBAC from what
//!   controllers watch, own and write, the deploy manifests, and `--print-manifests`.
//! - [`webhook`]: the webhook server (TLS, certificate reload, readiness, metrics), typed
//!   defaulting and validating webhooks, raw admission handlers, conversion by hub and spokes,
//!   and self-managed certificates.
//!
//! Operators depend on the `korral` facade crate, which re-exports this one with a prelude.
//! Not yet: the runtime benchmark against kube-runtime.
//!
//! ```
//! use std::time::Duration;
//! use korral_runtime::queue::{WorkQueue, process};
//! use korral_runtime::reconcile::{Action, ObjectRef};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let queue: WorkQueue<ObjectRef> = WorkQueue::new();
//! queue.add(ObjectRef::namespaced("default", "memcached-sample"));
//! queue.add(ObjectRef::namespaced("default", "memcached-sample")); // collapses with the first
//! assert_eq!(queue.len(), 1);
//! let key = queue.get().await.expect("a key");
//! // Reconcile `key` here, then hand the result to the queue.
//! process(&queue, &key, Ok(Action::requeue_after(Duration::from_secs(30)))).await;
//! queue.done(&key);
//! # }
//! ```

pub mod cache;
pub mod client;
pub mod conditions;
pub mod controller;
pub mod helpers;
pub mod leader;
pub mod manager;
pub mod manifests;
pub mod metrics;
pub mod queue;
pub mod reconcile;
pub mod trigger;
pub mod webhook;
