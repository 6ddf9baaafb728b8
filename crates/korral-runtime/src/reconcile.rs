//! The reconcile contract: what a reconciler is given ([`ObjectRef`]) and what it answers
//! ([`ReconcileResult`]: an [`Action`] or a [`ReconcileError`]).
//!
//! The work queue applies the answer (see [`crate::queue::process`]):
//!
//! | answer                          | effect on the key                                        |
//! |---------------------------------|----------------------------------------------------------|
//! | `Ok(Action::Done)`              | backoff reset, not requeued (until the next event)       |
//! | `Ok(Action::Requeue)`           | backoff reset, queued again now                          |
//! | `Ok(Action::RequeueAfter(d))`   | backoff reset, queued again after `d`                    |
//! | `Err(ReconcileError::Transient)`| retried with per-key backoff, shaped by its [`RetryHint`] |
//! | `Err(ReconcileError::Terminal)` | backoff reset, logged, not retried (until the next event)|

use std::error::Error as StdError;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A boxed, thread-safe error: the cause carried by a [`ReconcileError`].
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a reconciler returns: the next [`Action`] for the key, or why it failed.
pub type ReconcileResult = Result<Action, ReconcileError>;

/// The key of a reconcile request: the namespace (absent for cluster-scoped objects) and name of
/// the object to bring to its desired state.
///
/// Displays as `namespace/name`, or `name` for a cluster-scoped object, like controller-runtime's
/// `NamespacedName`; [`FromStr`] parses the same form back.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// The object's namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl ObjectRef {
    /// A reference to the namespaced object `namespace/name`.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// A reference to the cluster-scoped object `name`.
    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        Self {
            namespace: None,
            name: name.into(),
        }
    }

    /// The reference to `obj`, from its metadata; `None` if it has no name yet (an object that
    /// only has a `generateName` and was never created).
    pub fn from_object<R: kube::Resource>(obj: &R) -> Option<Self> {
        let meta = obj.meta();
        Some(Self {
            namespace: meta.namespace.clone(),
            name: meta.name.clone()?,
        })
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Why a string is not an [`ObjectRef`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid object reference {input:?}: expected `name` or `namespace/name`")]
pub struct ParseObjectRefError {
    /// The rejected input.
    pub input: String,
}

impl FromStr for ObjectRef {
    type Err = ParseObjectRefError;

    /// Parses `namespace/name` or `name` (cluster-scoped); neither part may be empty and there
    /// may be at most one `/`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseObjectRefError {
            input: s.to_owned(),
        };
        match s.split_once('/') {
            None if !s.is_empty() => Ok(Self::cluster_scoped(s)),
            None => Err(err()),
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(Self::namespaced(ns, name))
            }
            Some(_) => Err(err()),
        }
    }
}

impl<K: kube::runtime::reflector::Lookup + ?Sized> From<kube::runtime::reflector::ObjectRef<K>>
    for ObjectRef
{
    fn from(r: kube::runtime::reflector::ObjectRef<K>) -> Self {
        Self {
            namespace: r.namespace,
            name: r.name,
        }
    }
}

impl<K: kube::runtime::reflector::Lookup + ?Sized> From<&kube::runtime::reflector::ObjectRef<K>>
    for ObjectRef
{
    fn from(r: &kube::runtime::reflector::ObjectRef<K>) -> Self {
        Self {
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        }
    }
}

/// What to do with a key after a successful reconcile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Action {
    /// The object is in its desired state: reconcile again only on the next event.
    #[default]
    Done,
    /// Reconcile again right away (the backoff is reset; this is not an error).
    Requeue,
    /// Reconcile again after this delay (for polling something outside the cluster, or a
    /// periodic resync). An earlier request for the same key wins.
    RequeueAfter(Duration),
}

impl Action {
    /// [`Action::Done`].
    pub const fn done() -> Self {
        Self::Done
    }

    /// [`Action::Done`], under kube-runtime's name: reconcile again only when something
    /// changes.
    pub const fn await_change() -> Self {
        Self::Done
    }

    /// [`Action::RequeueAfter`] with `delay`, under kube-runtime's name
    /// (`Action::requeue(Duration)`); same as [`Action::requeue_after`].
    pub const fn requeue(delay: Duration) -> Self {
        Self::RequeueAfter(delay)
    }

    /// [`Action::Requeue`]: reconcile again right away.
    pub const fn requeue_now() -> Self {
        Self::Requeue
    }

    /// [`Action::RequeueAfter`] with `delay`.
    pub const fn requeue_after(delay: Duration) -> Self {
        Self::RequeueAfter(delay)
    }
}

/// What to do with a key whose reconcile failed, as decided by a controller's error policy
/// ([`Controller::error_policy`](crate::controller::Controller::error_policy)).
///
/// An [`Action`] converts into one, so a kube-runtime style policy returning
/// `Action::requeue(Duration::from_secs(5))` works unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ErrorAction {
    /// The controller's own handling: a transient error is retried after the per-key backoff
    /// (at least the server's Retry-After for 429 and 503; conflicts promptly, see
    /// [`RetryHint`]); a terminal error is not retried.
    #[default]
    Default,
    /// Retry after exactly this delay (zero: at once). Still counts as a failure of the key,
    /// so the backoff keeps growing for the errors the policy leaves to the default.
    RetryAfter(Duration),
    /// Do not retry until the next event for the key (as a terminal error; the backoff is
    /// reset).
    AwaitChange,
}

impl From<Action> for ErrorAction {
    /// `Done` → [`ErrorAction::AwaitChange`], `Requeue` → retry at once, `RequeueAfter(d)` →
    /// [`ErrorAction::RetryAfter`]`(d)`.
    fn from(action: Action) -> Self {
        match action {
            Action::Done => Self::AwaitChange,
            Action::Requeue => Self::RetryAfter(Duration::ZERO),
            Action::RequeueAfter(delay) => Self::RetryAfter(delay),
        }
    }
}

/// How the API server's answer asks a failed reconcile to be retried, read from the error's
/// cause chain by [`ReconcileError::retry_hint`]. The work queue uses it for transient errors:
///
/// | hint                  | retry delay                                                        |
/// |-----------------------|--------------------------------------------------------------------|
/// | `Throttled(ra)` (429) | the per-key backoff, but never earlier than the Retry-After `ra`   |
/// | `Unavailable(ra)` (500, 503, 504) | the per-key exponential backoff, at least `ra` if given |
/// | `Conflict` (409 Conflict) | prompt: its own short backoff (base delay doubling per consecutive conflict), whatever other errors grew the key's backoff to |
/// | `Other`               | the per-key exponential backoff                                    |
///
/// The Retry-After comes from the answer's `details.retryAfterSeconds` (kube-apiserver sets it
/// along with the `Retry-After` header; the header itself does not survive into a
/// `kube::Error`). Note that kube's default client (`Config::default_retry`) already retries
/// 429, 503 and 504 itself, up to 15 times and honouring the header, before a reconcile sees
/// the error; the hints matter when those retries are exhausted or turned off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryHint {
    /// 429 Too Many Requests, with the server's Retry-After (`details.retryAfterSeconds`), if
    /// any.
    Throttled(Option<Duration>),
    /// A server error (500, 503, 504), with the server's Retry-After, if any.
    Unavailable(Option<Duration>),
    /// 409 with reason `Conflict`: the object changed since it was read; re-read and retry.
    /// (409 `AlreadyExists` is not a conflict: it is retried as [`RetryHint::Other`].)
    Conflict,
    /// Anything else.
    Other,
}

impl RetryHint {
    /// The hint for an API `status` (a `kube::core::Status` from an error answer).
    pub fn from_status(status: &kube::core::Status) -> Self {
        let retry_after = status
            .details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(u64::from(s)));
        match status.code {
            429 => Self::Throttled(retry_after),
            409 if status.reason == "Conflict" => Self::Conflict,
            500 | 503 | 504 => Self::Unavailable(retry_after),
            _ => Self::Other,
        }
    }

    /// The hint from the first API status found in `err`'s source chain (`err` included):
    /// a `kube::Error::Api` or a `kube::core::Status`, wrapped in any number of errors that
    /// name their source.
    pub fn from_error(err: &(dyn StdError + 'static)) -> Self {
        let mut current: Option<&(dyn StdError + 'static)> = Some(err);
        while let Some(e) = current {
            if let Some(kube::Error::Api(status)) = e.downcast_ref::<kube::Error>() {
                return Self::from_status(status);
            }
            if let Some(status) = e.downcast_ref::<kube::core::Status>() {
                return Self::from_status(status);
            }
            if let Some(status) = e.downcast_ref::<Box<kube::core::Status>>() {
                return Self::from_status(status);
            }
            current = e.source();
        }
        Self::Other
    }
}

/// Why a reconcile failed, and whether to retry it.
///
/// Displays as its cause (the variant says how it is handled, the cause says what went wrong) and
/// forwards [`std::error::Error::source`] to the cause's source.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// A failure that may go away (conflict, timeout, unavailable API server, a dependency not
    /// ready yet): the key is retried with per-key exponential backoff.
    #[error(transparent)]
    Transient(BoxError),
    /// A failure that retrying cannot fix (invalid spec, a permanent refusal): logged, the backoff
    /// is reset, and the key is not retried until the next event for it.
    #[error(transparent)]
    Terminal(BoxError),
}

impl ReconcileError {
    /// A transient (retried) error from anything that converts into a [`BoxError`], including
    /// plain strings.
    pub fn transient(err: impl Into<BoxError>) -> Self {
        Self::Transient(err.into())
    }

    /// A terminal (not retried) error from anything that converts into a [`BoxError`], including
    /// plain strings.
    pub fn terminal(err: impl Into<BoxError>) -> Self {
        Self::Terminal(err.into())
    }

    /// Whether this error is terminal (not retried).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Terminal(_))
    }

    /// Whether this error is transient (retried with backoff).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }

    /// The underlying cause.
    pub fn cause(&self) -> &(dyn StdError + Send + Sync + 'static) {
        match self {
            Self::Transient(e) | Self::Terminal(e) => e.as_ref(),
        }
    }

    /// How the API server asked this failure to be retried (see [`RetryHint`]), from the
    /// first API status in the cause chain.
    pub fn retry_hint(&self) -> RetryHint {
        RetryHint::from_error(self.cause())
    }

    /// The underlying cause, by value.
    pub fn into_cause(self) -> BoxError {
        match self {
            Self::Transient(e) | Self::Terminal(e) => e,
        }
    }
}

/// API errors are transient: a conflict, a missing dependency or an unavailable server may all go
/// away. Use [`ReconcileError::terminal`] (or [`ResultExt::terminal`]) for the ones that will not.
impl From<kube::Error> for ReconcileError {
    fn from(err: kube::Error) -> Self {
        Self::Transient(Box::new(err))
    }
}

/// A boxed error is transient by default, like any other error propagated with `?`.
impl From<BoxError> for ReconcileError {
    fn from(err: BoxError) -> Self {
        Self::Transient(err)
    }
}

/// Classifies the error of any `Result` as transient or terminal, for use with `?` in a
/// reconciler: `client.get(..).await.transient()?`, `validate(&spec).terminal()?`.
pub trait ResultExt<T> {
    /// Maps the error to [`ReconcileError::Transient`].
    fn transient(self) -> Result<T, ReconcileError>;
    /// Maps the error to [`ReconcileError::Terminal`].
    fn terminal(self) -> Result<T, ReconcileError>;
}

impl<T, E: Into<BoxError>> ResultExt<T> for Result<T, E> {
    fn transient(self) -> Result<T, ReconcileError> {
        self.map_err(ReconcileError::transient)
    }

    fn terminal(self) -> Result<T, ReconcileError> {
        self.map_err(ReconcileError::terminal)
    }
}

/// The `result` label controller-runtime uses in `controller_runtime_reconcile_total` for this
/// outcome: `success`, `requeue`, `requeue_after` or `error` (terminal errors are errors too).
pub fn result_label(result: &ReconcileResult) -> &'static str {
    match result {
        Ok(Action::Done) => "success",
        Ok(Action::Requeue) => "requeue",
        Ok(Action::RequeueAfter(_)) => "requeue_after",
        Err(_) => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_ref_display_and_parse_round_trip() {
        let ns = ObjectRef::namespaced("default", "web");
        assert_eq!(ns.to_string(), "default/web");
        assert_eq!("default/web".parse::<ObjectRef>(), Ok(ns));

        let cluster = ObjectRef::cluster_scoped("node-1");
        assert_eq!(cluster.to_string(), "node-1");
        assert_eq!("node-1".parse::<ObjectRef>(), Ok(cluster));

        for bad in ["", "/", "ns/", "/name", "a/b/c"] {
            assert!(bad.parse::<ObjectRef>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn object_ref_orders_by_namespace_then_name() {
        let mut refs = [
            ObjectRef::namespaced("b", "a"),
            ObjectRef::namespaced("a", "z"),
            ObjectRef::cluster_scoped("m"),
            ObjectRef::namespaced("a", "b"),
        ];
        refs.sort();
        let shown: Vec<String> = refs.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["m", "a/b", "a/z", "b/a"]);
    }

    #[test]
    fn object_ref_from_object_and_kube_ref() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::ObjectMeta;

        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("cfg".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        assert_eq!(
            ObjectRef::from_object(&cm),
            Some(ObjectRef::namespaced("ns", "cfg"))
        );
        assert_eq!(ObjectRef::from_object(&ConfigMap::default()), None);

        let kube_ref = kube::runtime::reflector::ObjectRef::<ConfigMap>::new("cfg").within("ns");
        assert_eq!(
            ObjectRef::from(&kube_ref),
            ObjectRef::namespaced("ns", "cfg")
        );
        assert_eq!(
            ObjectRef::from(kube_ref),
            ObjectRef::namespaced("ns", "cfg")
        );
    }

    #[test]
    fn action_constructors() {
        assert_eq!(Action::done(), Action::Done);
        assert_eq!(Action::default(), Action::Done);
        assert_eq!(Action::requeue_now(), Action::Requeue);
        assert_eq!(Action::await_change(), Action::Done);
        assert_eq!(
            Action::requeue(Duration::from_secs(3)),
            Action::RequeueAfter(Duration::from_secs(3))
        );
        assert_eq!(
            Action::requeue_after(Duration::from_secs(3)),
            Action::RequeueAfter(Duration::from_secs(3))
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn errors_classify_and_display_their_cause() {
        let t = ReconcileError::transient("conflict");
        assert!(t.is_transient() && !t.is_terminal());
        assert_eq!(t.to_string(), "conflict");

        let e = ReconcileError::terminal(Outer(std::io::Error::other("inner")));
        assert!(e.is_terminal());
        assert_eq!(e.to_string(), "outer");
        // The source chain continues with the cause's own source.
        assert_eq!(
            e.source().map(ToString::to_string).as_deref(),
            Some("inner")
        );
        assert_eq!(e.cause().to_string(), "outer");
        assert_eq!(e.into_cause().to_string(), "outer");
    }

    #[test]
    fn conversions_are_transient_by_default() {
        let kube_err = kube::Error::LinesCodecMaxLineLengthExceeded;
        assert!(ReconcileError::from(kube_err).is_transient());

        let boxed: BoxError = "boom".into();
        assert!(ReconcileError::from(boxed).is_transient());

        fn reconcile() -> ReconcileResult {
            let parsed: Result<u32, std::num::ParseIntError> = "x".parse();
            parsed.terminal()?;
            Ok(Action::Done)
        }
        assert!(matches!(reconcile(), Err(ReconcileError::Terminal(_))));

        let io: Result<(), std::io::Error> = Err(std::io::Error::other("down"));
        assert!(matches!(io.transient(), Err(ReconcileError::Transient(_))));
    }

    #[test]
    fn result_labels_match_controller_runtime() {
        assert_eq!(result_label(&Ok(Action::Done)), "success");
        assert_eq!(result_label(&Ok(Action::Requeue)), "requeue");
        assert_eq!(
            result_label(&Ok(Action::RequeueAfter(Duration::ZERO))),
            "requeue_after"
        );
        assert_eq!(result_label(&Err(ReconcileError::terminal("x"))), "error");
    }

    fn status(code: u16, reason: &str, retry_after: u32) -> kube::core::Status {
        kube::core::Status {
            code,
            reason: reason.to_owned(),
            details: (retry_after > 0).then(|| kube::core::response::StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                causes: Vec::new(),
                retry_after_seconds: retry_after,
            }),
            ..kube::core::Status::default()
        }
    }

    fn api(code: u16, reason: &str, retry_after: u32) -> kube::Error {
        kube::Error::Api(Box::new(status(code, reason, retry_after)))
    }

    #[derive(Debug, thiserror::Error)]
    #[error("writing the Deployment")]
    struct Wrapped(#[source] kube::Error);

    #[test]
    fn retry_hints_come_from_the_api_status_in_the_cause_chain() {
        let hint = |e: kube::Error| ReconcileError::from(e).retry_hint();
        assert_eq!(
            hint(api(429, "TooManyRequests", 2)),
            RetryHint::Throttled(Some(Duration::from_secs(2)))
        );
        assert_eq!(
            hint(api(429, "TooManyRequests", 0)),
            RetryHint::Throttled(None)
        );
        assert_eq!(hint(api(409, "Conflict", 0)), RetryHint::Conflict);
        assert_eq!(hint(api(409, "AlreadyExists", 0)), RetryHint::Other);
        assert_eq!(
            hint(api(503, "ServiceUnavailable", 1)),
            RetryHint::Unavailable(Some(Duration::from_secs(1)))
        );
        assert_eq!(
            hint(api(500, "InternalError", 0)),
            RetryHint::Unavailable(None)
        );
        assert_eq!(hint(api(404, "NotFound", 0)), RetryHint::Other);
        // Wrapped by a helper's error that names its source, and as a bare Status.
        let wrapped = ReconcileError::transient(Wrapped(api(429, "TooManyRequests", 3)));
        assert_eq!(
            wrapped.retry_hint(),
            RetryHint::Throttled(Some(Duration::from_secs(3)))
        );
        let bare = ReconcileError::transient(status(409, "Conflict", 0));
        assert_eq!(bare.retry_hint(), RetryHint::Conflict);
        assert_eq!(
            ReconcileError::transient("no status").retry_hint(),
            RetryHint::Other
        );
    }

    #[test]
    fn actions_convert_to_error_actions_as_kube_runtime_policies_mean_them() {
        assert_eq!(
            ErrorAction::from(Action::requeue(Duration::from_secs(5))),
            ErrorAction::RetryAfter(Duration::from_secs(5))
        );
        assert_eq!(
            ErrorAction::from(Action::requeue_now()),
            ErrorAction::RetryAfter(Duration::ZERO)
        );
        assert_eq!(
            ErrorAction::from(Action::await_change()),
            ErrorAction::AwaitChange
        );
        assert_eq!(ErrorAction::default(), ErrorAction::Default);
    }
}
